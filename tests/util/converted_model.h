#pragma once
// Models converted to neuron bundles (sparrow convert) for the tests of what reads their records:
// a copy of a given file, or a small PowerInfer-format synthetic model (64 x 256 neurons, 2
// layers, a predictor).
// Header-only: its users link sparrow_tools.
#include <gtest/gtest.h>

#include <string>

#include "engine/kernels/quantize.h"
#include "engine/tools/bundle_convert.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {

// `src` converted (sparrow convert, file order) to TempPath(name + "-bundles.gguf"), whose path
// is returned; "" (and a failed test) on error.
inline std::string ConvertedCopy(const std::string& src, const std::string& name) {
  tools::ConvertOptions o;
  o.model = src;
  o.output = TempPath(name + "-bundles.gguf");
  auto sum = tools::ConvertToBundles(o);
  EXPECT_TRUE(sum.ok()) << sum.status().ToString();
  return sum.ok() ? o.output : "";
}

// A model of `spec` (quantized by the kernels), converted; the converted file's path (under
// TempPath, named after `name`); fails the test on error.
inline std::string WriteConvertedModel(const std::string& name, LlamaModelSpec s) {
  s.quantize = [](TensorType t, const float* src, void* dst, int64_t n) {
    kernels::QuantizeRow(t, src, dst, n);
  };
  auto w = MakeLlamaModel(s);
  EXPECT_TRUE(w.ok());
  if (!w.ok()) return "";
  const std::string src = TempPath(name + "-src.gguf");
  EXPECT_TRUE(w->WriteFile(src).ok());
  return ConvertedCopy(src, name);
}

// A PowerInfer-layout Q8_0 model whose bundles take 64 MiB (8 layers of 4096 neurons, 1024
// positions), converted: large enough that its cache and weights are most of a process.
inline std::string WriteConvertedFlashSizedModel(const std::string& name) {
  LlamaModelSpec s;
  s.weight_type = s.embd_type = s.output_type = TensorType::kQ8_0;
  s.n_embd = 512;
  s.n_head = 8;
  s.n_head_kv = 8;
  s.n_ff = 4096;
  s.n_layer = 8;
  s.n_ctx = 1024;
  s.predictor_rank = 64;
  return WriteConvertedModel(name, s);
}

// A small PowerInfer-layout synthetic model of `type`, converted.
inline std::string WriteConvertedSyntheticModel(const std::string& name, TensorType type) {
  LlamaModelSpec s;
  s.weight_type = s.embd_type = s.output_type = type;
  s.n_embd = 64;
  s.n_ff = 256;
  s.predictor_rank = 32;
  return WriteConvertedModel(name, s);
}

}  // namespace sparrow::testing
