#pragma once
// The models an operator lets the admin API switch to: the .gguf files directly inside
// `model_dir` (symlinks the operator put there are followed). A model is named by its file name
// (with or without ".gguf"); a name with a path in it ('/', "..") or a hidden file is refused,
// so a caller with the admin key can only pick among the directory's entries. Stateless,
// thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::server {

struct ModelFile {
  std::string name;  // the file name, "tinyllama.gguf"
  std::string path;  // model_dir/name
  int64_t bytes = 0;
  int64_t modified_s = 0;  // last written, seconds since the Unix epoch
};

// The size and time of the file at `path` (zero for what cannot be read).
ModelFile StatModelFile(const std::string& path);

// The .gguf files of `dir`, by name. NotFound/IoError naming the directory when it cannot be read.
Result<std::vector<ModelFile>> ListModelDir(const std::string& dir);

// The file `name` stands for. InvalidArgument for a name that is not a plain file name (or
// not a regular file); NotFound when there is no such file.
Result<ModelFile> ResolveModelName(const std::string& dir, const std::string& name);

}  // namespace sparrow::server
