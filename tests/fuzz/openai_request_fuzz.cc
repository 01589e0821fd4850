// libFuzzer target for the OpenAI and Ollama request parsers: any byte string, as the body of
// any of their endpoints, must give a parsed request or an InvalidArgument naming what is wrong. An
// exception escaping the parser (the class of bug that once dropped connections silently) aborts,
// and so does an accepted body nested deeper than kMaxJsonDepth (the later walks recurse per level:
// 150,000 levels once crashed sparrowd).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/ollama/ollama_request.h"
#include "api/openai/json_limits.h"
#include "api/openai/openai_types.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "openai_request_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

template <typename R>
void CheckParsed(const R& r, const std::string& param, const char* endpoint) {
  if (r.ok()) return;
  if (r.status().code() != sparrow::StatusCode::kInvalidArgument) {
    Fail(endpoint, "unexpected status " + r.status().ToString());
  }
  if (param.empty()) Fail(endpoint, "error names no field: " + r.status().message());
}

// Levels of objects and arrays, counted without recursion.
int Depth(const nlohmann::json& root) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> open = {{&root, 1}};
  while (!open.empty()) {
    auto [v, d] = open.back();
    open.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, d);
    for (const auto& child : *v) open.push_back({&child, d + 1});
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  std::string param;
  auto j = sparrow::openai::ParseRequestBody(body, &param);
  if (!j.ok()) {
    if (j.status().code() != sparrow::StatusCode::kInvalidArgument) {
      Fail("body", "unexpected status " + j.status().ToString());
    }
    return 0;
  }
  if (Depth(*j) > sparrow::openai::kMaxJsonDepth) Fail("body", "accepted past the depth limit");
  // Whatever was accepted must serialize back (error bodies echo values).
  (void)sparrow::openai::Dump(*j);
  param.clear();
  CheckParsed(sparrow::openai::ParseChatCompletionRequest(*j, &param), param, "chat");
  param.clear();
  CheckParsed(sparrow::openai::ParseCompletionRequest(*j, &param), param, "completions");
  namespace ollama = sparrow::ollama;
  param.clear();
  CheckParsed(ollama::ParseChatRequest(*j, &param), param, "ollama chat");
  param.clear();
  CheckParsed(ollama::ParseGenerateRequest(*j, &param), param, "ollama generate");
  param.clear();
  CheckParsed(ollama::ParseEmbedRequest(*j, &param), param, "ollama embed");
  param.clear();
  CheckParsed(ollama::ParseLegacyEmbedRequest(*j, &param), param, "ollama embeddings");
  param.clear();
  CheckParsed(ollama::ParseShowRequest(*j, &param), param, "ollama show");
  return 0;
}
