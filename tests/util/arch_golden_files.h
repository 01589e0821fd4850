#pragma once
// The goldens of tests/golden/arch describe model files that are not in the repository: each
// says how to remake its file ("made_with": `sparrow quantize` of a ../shared/arch file, or the
// synthetic_arch.h writer). These find the goldens and remake a file. Thread-compatible.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sparrow::testing {

// tests/golden/arch/*.json, sorted.
std::vector<std::string> RepoArchGoldenPaths();

// Writes the model `golden` describes to `path`: "" on success, "skip: ..." when the source file
// is absent, else what went wrong.
std::string RegenerateArchModel(const nlohmann::json& golden, const std::string& path);

}  // namespace sparrow::testing
