#include "engine/model/model.h"

namespace sparrow {

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, Env* env) {
  std::unique_ptr<Model> m(new Model());
  SPARROW_ASSIGN_OR_RETURN(m->file_, GgufFile::Open(path, env));
  auto config = ReadModelConfig(*m->file_);
  if (!config.ok()) return config.status().WithContext(path);
  m->config_ = std::move(config).value();
  auto weights = BindModelWeights(*m->file_, m->config_);
  if (!weights.ok()) return weights.status().WithContext(path);
  m->weights_ = std::move(weights).value();
  return m;
}

}  // namespace sparrow
