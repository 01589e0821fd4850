#include "server/core/model_dir.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

namespace sparrow::server {
namespace {

namespace fs = std::filesystem;

bool PlainName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    return c == '/' || c == '\\' || c == '\0' || static_cast<unsigned char>(c) < 0x20;
  });
}

int64_t ModifiedSeconds(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::file_clock::to_sys(t).time_since_epoch())
      .count();
}

}  // namespace

ModelFile StatModelFile(const std::string& path) {
  ModelFile m;
  m.path = path;
  m.name = fs::path(path).filename().string();
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  m.bytes = ec ? 0 : static_cast<int64_t>(bytes);
  m.modified_s = ModifiedSeconds(path);
  return m;
}

Result<std::vector<ModelFile>> ListModelDir(const std::string& dir) {
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return NotFound("model_dir '" + dir + "' cannot be opened: " + ec.message());
  std::vector<ModelFile> out;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code entry_ec;
    // is_regular_file and file_size follow symlinks, as ResolveModelName does.
    if (!PlainName(name) || !name.ends_with(".gguf") || !it->is_regular_file(entry_ec)) continue;
    const auto bytes = it->file_size(entry_ec);
    out.push_back({name, it->path().string(), entry_ec ? 0 : static_cast<int64_t>(bytes),
                   ModifiedSeconds(it->path())});
  }
  if (ec) return IoError("model_dir '" + dir + "' cannot be read: " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const ModelFile& a, const ModelFile& b) { return a.name < b.name; });
  return out;
}

Result<ModelFile> ResolveModelName(const std::string& dir, const std::string& name) {
  std::string file = name;
  if (!file.ends_with(".gguf")) file += ".gguf";
  if (!PlainName(name) || file == ".gguf" || name == "." || name == "..") {
    return InvalidArgument(
        "'model' must be the name of a .gguf file in model_dir, without a "
        "path; got '" +
        name + "'");
  }
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return NotFound("model_dir '" + dir + "' cannot be opened: " + ec.message());
  const fs::path candidate = root / file;
  if (!fs::exists(candidate, ec)) {
    return NotFound("there is no model '" + file +
                    "' in model_dir (GET /admin/v1/models lists them)");
  }
  // A symlink the operator put in model_dir is followed (models often live elsewhere): the
  // directory's entries are the operator's choice, and a caller can only pick among them.
  const fs::path real = fs::canonical(candidate, ec);
  if (ec || !fs::is_regular_file(real, ec)) {
    return InvalidArgument("'" + file + "' in model_dir is not a regular file");
  }
  ModelFile m;
  m.name = file;
  m.path = (root / file).string();
  m.bytes = static_cast<int64_t>(fs::file_size(real, ec));
  return m;
}

}  // namespace sparrow::server
