#pragma once
// `sparrow quantize`: rewrites an F32/F16 GGUF in one of llama.cpp's file types (f16, q8_0, q4_0,
// q4_k_m), with llama-quantize's choice of type per tensor (quantize_plan.h) and Sparrow's own
// scalar quantizers, so the output is a deterministic function of the input file.
#include <cstdint>
#include <string>

#include "engine/common/result.h"

namespace CLI {
class App;
}

namespace sparrow::tools {

struct QuantizeOptions {
  std::string model;   // input GGUF
  std::string output;  // GGUF to write
  std::string type;    // f16, q8_0, q4_0, q4_k_m
};

struct QuantizeSummary {
  int64_t converted = 0;  // tensors written in a new type
  int64_t kept = 0;       // tensors copied as they were (norms, biases, router, rope factors)
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
};

// Writes o.output. Errors name the file and tensor at fault; the output appears only on success.
Result<QuantizeSummary> QuantizeModel(const QuantizeOptions& o);

void RegisterQuantizeCommand(CLI::App& app, QuantizeOptions& opts, int& exit_code);
int RunQuantize(const QuantizeOptions& opts);

}  // namespace sparrow::tools
