#include "server/core/key_ring.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "server/core/api_key.h"

namespace sparrow::server {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string BaseName(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}

}  // namespace

Result<std::vector<KeyRing::Entry>> KeyRing::ParseKeyFile(std::string_view text,
                                                          const std::string& file,
                                                          size_t min_key_length) {
  std::vector<Entry> out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    Entry e;
    const size_t space = line.find_first_of(" \t");
    if (space == std::string_view::npos) {
      e.id = BaseName(file) + ":" + std::to_string(line_no);
      e.key = std::string(line);
    } else {
      e.id = std::string(line.substr(0, space));
      e.key = std::string(Trim(line.substr(space)));
      if (e.key.find_first_of(" \t") != std::string::npos) {
        return InvalidArgument("key file '" + file + "' line " + std::to_string(line_no) +
                               ": expected 'KEY' or 'ID KEY', found more than two words");
      }
    }
    if (e.key.size() < min_key_length) {
      return InvalidArgument("key file '" + file + "' line " + std::to_string(line_no) +
                             ": the key is " + std::to_string(e.key.size()) +
                             " characters; use at least " + std::to_string(min_key_length) +
                             " (for example: openssl rand -hex 16)");
    }
    for (const Entry& other : out) {
      if (other.id == e.id) {
        return InvalidArgument("key file '" + file + "' line " + std::to_string(line_no) +
                               ": the id '" + e.id + "' is used twice");
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::unique_ptr<KeyRing>> KeyRing::Load(KeyRingOptions options) {
  if (!options.literal.empty() && options.literal.size() < options.min_key_length) {
    return InvalidArgument("config: '" + options.scope + "_key' is " +
                           std::to_string(options.literal.size()) + " characters; use at least " +
                           std::to_string(options.min_key_length) +
                           " (for example: openssl rand -hex 16)");
  }
  std::unique_ptr<KeyRing> ring(new KeyRing(std::move(options)));
  std::lock_guard<std::mutex> lock(ring->mu_);
  SPARROW_RETURN_IF_ERROR(ring->Reload());
  return ring;
}

Status KeyRing::Reload() {
  std::vector<Entry> entries;
  if (!opts_.literal.empty()) entries.push_back({opts_.scope + "_key", opts_.literal});
  if (!opts_.file.empty()) {
    struct stat st {};
    std::ifstream in(opts_.file);
    if (!in || ::stat(opts_.file.c_str(), &st) != 0) {
      return NotFound("config: cannot read '" + opts_.scope + "_key_file' '" + opts_.file + "'");
    }
    if ((st.st_mode & 077) != 0) {
      spdlog::warn("auth: key file '{}' can be read by other users; chmod 600 it", opts_.file);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    auto parsed = ParseKeyFile(ss.str(), opts_.file, opts_.min_key_length);
    if (!parsed.ok()) return parsed.status().WithContext("config");
    if (parsed->empty()) {
      return InvalidArgument("config: '" + opts_.scope + "_key_file' '" + opts_.file +
                             "' holds no key");
    }
    for (auto& e : *parsed) entries.push_back(std::move(e));
    file_mtime_ = st.st_mtim;
    file_size_ = st.st_size;
  }
  entries_ = std::move(entries);
  return Status::Ok();
}

void KeyRing::MaybeReload() {
  if (opts_.file.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return;
  next_check_ = now + std::chrono::seconds(1);
  struct stat st {};
  if (::stat(opts_.file.c_str(), &st) != 0) return;  // gone for a moment (an editor's rename)
  if (st.st_mtim.tv_sec == file_mtime_.tv_sec && st.st_mtim.tv_nsec == file_mtime_.tv_nsec &&
      st.st_size == file_size_) {
    return;
  }
  const size_t before = entries_.size();
  Status s = Reload();
  if (!s.ok()) {
    spdlog::error("auth: {}; keeping the {} keys loaded before", s.message(), before);
    file_mtime_ = st.st_mtim;  // do not retry until it changes again
    file_size_ = st.st_size;
    return;
  }
  spdlog::info("auth: reloaded '{}': {} {} keys valid", opts_.file, entries_.size(), opts_.scope);
}

bool KeyRing::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.empty();
}

size_t KeyRing::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::optional<std::string> KeyRing::Match(std::string_view token) {
  std::lock_guard<std::mutex> lock(mu_);
  MaybeReload();
  if (token.empty()) return std::nullopt;
  // Every key is compared, so the time does not tell which one (or whether one) matched.
  std::optional<std::string> found;
  for (const Entry& e : entries_) {
    if (ConstantTimeEquals(token, e.key) && !found) found = e.id;
  }
  return found;
}

}  // namespace sparrow::server
