#pragma once
// Model: an opened GGUF model ready to run: the mapped file, its hyper-parameters and its
// weights bound by role. Immutable after Load(); share it between threads freely.
#include <memory>
#include <string>

#include "engine/common/result.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace sparrow {

class Model {
 public:
  // Opens (through `env`; null: Env::Default()), validates and binds `path`. Errors start with
  // the path.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, Env* env = nullptr);

  const GgufFile& file() const { return *file_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }

 private:
  Model() = default;
  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
};

}  // namespace sparrow
