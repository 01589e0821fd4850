#pragma once
// `sparrow convert`: rewrites a model in the neuron-bundle layout (engine/model/neuron_bundles.h)
// that flash offload reads one neuron at a time.
#include "engine/tools/bundle_convert.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

void RegisterConvertCommand(CLI::App& app, ConvertOptions& opts, int& exit_code);
int RunConvert(const ConvertOptions& opts);

}  // namespace sparrow::tools
