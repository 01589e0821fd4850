#pragma once
// KeyRing: the bearer keys one scope accepts (inference or admin). Keys come from a literal
// setting and/or a key file; several may be valid at once, so a key is rotated by adding the
// new line, moving clients over and deleting the old line. The file is reread when it changes
// (checked at most once a second), without a restart; a file that turns bad keeps the last
// good keys and logs why. Each key has an id that the audit log names instead of the key.
// Thread-safe.
#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::server {

struct KeyRingOptions {
  std::string scope;          // "api" or "admin": names the settings in messages
  std::string literal;        // a key given as a setting ("" -> none)
  std::string file;           // a key file ("" -> none)
  size_t min_key_length = 1;  // shorter keys are refused when loading
};

class KeyRing {
 public:
  // Reads the file. InvalidArgument naming the file and line for a bad key, NotFound when the
  // file cannot be read.
  static Result<std::unique_ptr<KeyRing>> Load(KeyRingOptions options);

  // True when no key is configured (the scope is then open, or off for admin).
  bool empty() const;
  // The id of the key equal to `token`, compared in constant time against every key.
  std::optional<std::string> Match(std::string_view token);
  size_t size() const;

  // Key file syntax: one key per line, optionally preceded by an id and a space
  // ("laptop 6f1c..."); '#' starts a comment line; blank lines are skipped. A key without an
  // id is named "<file name>:<line>". Exposed for tests.
  struct Entry {
    std::string id, key;
  };
  static Result<std::vector<Entry>> ParseKeyFile(std::string_view text, const std::string& file,
                                                 size_t min_key_length);

 private:
  explicit KeyRing(KeyRingOptions options) : opts_(std::move(options)) {}
  Status Reload();  // under mu_
  void MaybeReload();

  KeyRingOptions opts_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // guarded by mu_
  std::timespec file_mtime_{};
  off_t file_size_ = -1;
  std::chrono::steady_clock::time_point next_check_{};
};

}  // namespace sparrow::server
