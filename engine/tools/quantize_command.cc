#include "engine/tools/quantize_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/quantize.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_file_writer.h"
#include "engine/tools/quantize_plan.h"

namespace sparrow::tools {
namespace {

// llama.cpp's GGML_QNT_VERSION, which llama-quantize records in every file it writes.
constexpr uint32_t kQuantizationVersion = 2;

struct PlannedTensor {
  const GgufTensorInfo* src;
  TensorType type;
  bool convert;  // false: the bytes are copied
};

Result<QuantizeModelFacts> ReadFacts(const GgufFile& f) {
  SPARROW_ASSIGN_OR_RETURN(std::string_view arch, f.GetString("general.architecture"));
  const std::string a(arch);
  QuantizeModelFacts facts;
  SPARROW_ASSIGN_OR_RETURN(uint64_t n_layer, f.GetUInt(a + ".block_count"));
  SPARROW_ASSIGN_OR_RETURN(uint64_t n_expert, f.GetUIntOr(a + ".expert_count", 0));
  facts.n_layer = static_cast<int64_t>(n_layer);
  facts.n_expert = static_cast<int64_t>(n_expert);
  facts.tied_output = f.FindTensor("output.weight") == nullptr;
  return facts;
}

Result<std::vector<PlannedTensor>> Plan(const GgufFile& f, ModelFileType ftype) {
  SPARROW_ASSIGN_OR_RETURN(QuantizeModelFacts facts, ReadFacts(f));
  std::vector<PlannedTensor> plan;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (!IsQuantizable(t.name, t.dims)) {
      plan.push_back({&t, t.type, false});
      continue;
    }
    if (t.type != TensorType::kF32 && t.type != TensorType::kF16 && t.type != TensorType::kBF16) {
      return InvalidArgument("tensor '" + t.name + "' is already " +
                             std::string(TensorTypeName(t.type)) +
                             "; quantize from an F32, F16 or BF16 file");
    }
    SPARROW_ASSIGN_OR_RETURN(TensorType type,
                             QuantizedType(ftype, t.name, static_cast<int64_t>(t.dims[0]), facts));
    if (!kernels::CanQuantize(type)) {
      return Unsupported("tensor '" + t.name + "': no quantizer for " +
                         std::string(TensorTypeName(type)));
    }
    plan.push_back({&t, type, true});
  }
  return plan;
}

// Copies the metadata, with general.file_type and general.quantization_version set.
Status CopyMetadata(const GgufFile& f, ModelFileType ftype, GgufHeader& h) {
  bool has_file_type = false;
  bool has_version = false;
  for (const auto& [key, value] : f.metadata()) {
    if (key == "general.alignment") {
      SPARROW_ASSIGN_OR_RETURN(uint64_t alignment, f.GetUInt(key));
      h.SetAlignment(static_cast<uint32_t>(alignment));
    } else if (key == "general.file_type") {
      h.AddU32(key, GgufFileTypeId(ftype));
      has_file_type = true;
    } else if (key == "general.quantization_version") {
      h.AddU32(key, kQuantizationVersion);
      has_version = true;
    } else {
      SPARROW_RETURN_IF_ERROR(h.AddCopy(key, value).WithContext("key '" + key + "'"));
    }
  }
  if (!has_file_type) h.AddU32("general.file_type", GgufFileTypeId(ftype));
  if (!has_version) h.AddU32("general.quantization_version", kQuantizationVersion);
  return Status::Ok();
}

// Every row (of every expert, for 3-D tensors) is converted on its own.
void ConvertTensor(const PlannedTensor& p, std::vector<float>& row, std::vector<uint8_t>& out) {
  const GgufTensorInfo& t = *p.src;
  const int64_t cols = static_cast<int64_t>(t.dims[0]);
  const int64_t rows = static_cast<int64_t>(t.rows());
  const size_t in_row = kernels::RowBytes(t.type, cols);
  const size_t out_row = kernels::RowBytes(p.type, cols);
  row.resize(cols);
  out.resize(out_row * rows);
  for (int64_t r = 0; r < rows; ++r) {
    kernels::DequantizeRow(t.type, t.data + r * in_row, row.data(), cols);
    kernels::QuantizeRow(p.type, row.data(), out.data() + r * out_row, cols);
  }
}

}  // namespace

Result<QuantizeSummary> QuantizeModel(const QuantizeOptions& o) {
  const std::optional<ModelFileType> ftype = ParseModelFileType(o.type);
  if (!ftype) {
    return InvalidArgument("--type " + o.type + ": expected f16, q8_0, q4_0 or q4_k_m");
  }
  if (o.output.empty()) return InvalidArgument("an output path (-o) is needed");
  SPARROW_ASSIGN_OR_RETURN(auto src, GgufFile::Open(o.model));
  auto plan = Plan(*src, *ftype);
  if (!plan.ok()) return plan.status().WithContext(o.model);

  GgufFileWriter w;
  SPARROW_RETURN_IF_ERROR(CopyMetadata(*src, *ftype, w.header()).WithContext(o.model));
  for (const PlannedTensor& p : *plan) {
    if (w.DeclareTensor(p.src->name, p.type, p.src->dims) == 0) {
      return InvalidArgument(o.model + ": tensor '" + p.src->name + "' does not fit type " +
                             std::string(TensorTypeName(p.type)));
    }
  }
  SPARROW_RETURN_IF_ERROR(w.Begin(o.output));
  QuantizeSummary sum;
  sum.input_bytes = src->file_size() - src->data_offset();
  std::vector<float> row;
  std::vector<uint8_t> out;
  for (const PlannedTensor& p : *plan) {
    if (!p.convert) {
      ++sum.kept;
      SPARROW_RETURN_IF_ERROR(w.Append(p.src->data, p.src->n_bytes));
      continue;
    }
    ++sum.converted;
    ConvertTensor(p, row, out);
    SPARROW_RETURN_IF_ERROR(w.Append(out.data(), out.size()));
  }
  SPARROW_RETURN_IF_ERROR(w.Finish());
  sum.output_bytes = w.data_bytes();
  return sum;
}

void RegisterQuantizeCommand(CLI::App& app, QuantizeOptions& o, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Rewrite an F32/F16 model in another file type, each tensor's type chosen as "
      "llama-quantize would (deterministic: Sparrow's scalar quantizers)");
  cmd->add_option("-m,--model", o.model, "Model to quantize (F32, F16 or BF16 weights)")
      ->required();
  cmd->add_option("-o,--output", o.output, "Path of the GGUF file to write")->required();
  cmd->add_option("--type", o.type, "File type: f16, q8_0, q4_0, q4_k_m")->required();
  cmd->callback([&o, &exit_code] { exit_code = RunQuantize(o); });
}

int RunQuantize(const QuantizeOptions& o) {
  auto sum = QuantizeModel(o);
  if (!sum.ok()) {
    std::fprintf(stderr, "sparrow quantize: %s\n", sum.status().ToString().c_str());
    return 1;
  }
  std::printf("wrote %s (%s): %lld tensors converted, %lld copied; %.2f MiB -> %.2f MiB of data\n",
              o.output.c_str(), o.type.c_str(), static_cast<long long>(sum->converted),
              static_cast<long long>(sum->kept), static_cast<double>(sum->input_bytes) / (1 << 20),
              static_cast<double>(sum->output_bytes) / (1 << 20));
  return 0;
}

}  // namespace sparrow::tools
