#include "engine/tools/expert_convert.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <thread>

#include "engine/kernels/dequantize.h"
#include "engine/model/expert_bundles.h"
#include "engine/model/gguf_file_writer.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tools/bundle_header.h"
#include "engine/tools/expert_calibration.h"

namespace sparrow::tools {
namespace {

namespace bk = bundle_keys;

bool IsStackedExpert(const std::string& name, int64_t n_layer) {
  int consumed = 0;
  long long il = -1;
  if (std::sscanf(name.c_str(), "blk.%lld.%n", &il, &consumed) != 1 || consumed == 0 || il < 0 ||
      il >= n_layer) {
    return false;
  }
  const std::string rest = name.substr(consumed);
  return rest == "ffn_gate_exps.weight" || rest == "ffn_up_exps.weight" ||
         rest == "ffn_down_exps.weight";
}

// One expert's rows of a stacked matrix (rows_per_expert rows from expert e's first).
const uint8_t* ExpertBytes(const kernels::WeightMatrix& m, int64_t e, int64_t rows_per_expert) {
  return static_cast<const uint8_t*>(m.data) +
         static_cast<size_t>(e * rows_per_expert) * m.row_stride_bytes;
}

// Expert e's neurons as bundles at `out`: per neuron its up row, then its column of the down
// matrix as a row of `down_type`.
void WriteNeuronBundles(const ModelConfig& c, const LayerWeights& l, int64_t e,
                        TensorType down_type, uint8_t* out) {
  const ExpertMatrices m = StackedExpert(c, l, e);
  const size_t up_row = m.up.row_stride_bytes;
  const size_t down_row = kernels::RowBytes(down_type, c.n_embd);
  const std::vector<uint8_t> rows = TransposeDown(m.down, down_type);
  const auto* up = static_cast<const uint8_t*>(m.up.data);
  for (int64_t i = 0; i < c.n_ff_exp; ++i) {
    uint8_t* bundle = out + i * (up_row + down_row);
    std::memcpy(bundle, up + i * up_row, up_row);
    std::memcpy(bundle + up_row, &rows[i * down_row], down_row);
  }
}

}  // namespace

Result<ConvertSummary> ConvertExpertsToBundles(const ConvertOptions& o, const Model& model) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const GgufFile& src = model.file();
  if (!o.profile.empty()) {
    return InvalidArgument(
        "--profile holds neuron frequencies; a mixture-of-experts model's experts are ordered "
        "by --calibrate TEXT (the router's choices on it)");
  }
  ConvertSummary sum;
  sum.n_layer = c.n_layer;
  sum.n_ff = c.n_ff_exp;
  sum.n_expert = c.n_expert;
  sum.gate_in_bundle = true;

  // A ReGLU expert's closed neurons contribute exactly nothing: bundles let it skip their rows.
  const bool neurons = o.expert_neurons;
  if (neurons && c.ffn_kind != FfnKind::kReluGlu) {
    return InvalidArgument(
        "--expert-neurons needs ReGLU experts (smallthinker): this model's expert neurons are "
        "never exactly zero, so none could be skipped");
  }
  sum.expert_neuron_bundles = neurons;
  std::vector<uint64_t> record_bytes(c.n_layer);
  std::vector<uint32_t> gate_types, up_types, down_types;
  std::vector<TensorType> down_type(c.n_layer);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& l = w.layers[il];
    down_type[il] =
        neurons ? ExpertDownRowsType(l.ffn_down_exps.type, c.n_embd) : l.ffn_down_exps.type;
    gate_types.push_back(static_cast<uint32_t>(l.ffn_gate_exps.type));
    up_types.push_back(static_cast<uint32_t>(l.ffn_up_exps.type));
    down_types.push_back(static_cast<uint32_t>(down_type[il]));
    const uint64_t raw = ExpertRawBytes(l.ffn_gate_exps.type, l.ffn_up_exps.type, down_type[il],
                                        c.n_embd, c.n_ff_exp, neurons);
    record_bytes[il] = BundleRecordBytes(raw, o.io_block);
    if (il == 0) {
      sum.row_bytes = raw;
      sum.record_bytes = record_bytes[0];
    }
  }

  std::vector<std::vector<int32_t>> orders(c.n_layer, std::vector<int32_t>(c.n_expert));
  for (auto& order : orders) std::iota(order.begin(), order.end(), 0);
  if (o.order) {
    for (int64_t il = 0; il < c.n_layer; ++il) orders[il] = o.order(il, c.n_expert);
  } else if (!o.calibrate.empty()) {
    const int threads = o.threads > 0
                            ? o.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    SPARROW_ASSIGN_OR_RETURN(ExpertCalibration cal,
                             CalibrateExperts(o.model, o.calibrate, o.calibrate_tokens, threads,
                                              static_cast<size_t>(sum.record_bytes)));
    for (double share : {0.1, 0.25, 0.5}) {
      sum.expert_coverage.emplace_back(share, HottestExpertShare(cal.frequency, share));
    }
    orders = std::move(cal.orders);
    sum.miss_curve = std::move(cal.miss_curve);
    sum.ordered_by_profile = true;
  }
  SPARROW_RETURN_IF_ERROR(CheckRecordOrders(orders, c.n_expert, "expert"));

  GgufFileWriter out;
  GgufHeader& h = out.header();
  SPARROW_RETURN_IF_ERROR(WriteBundleHeader(src, o.model, expert_keys::kLayoutName, o.io_block, h));
  h.AddArray(std::string(bk::kGateTypes), gate_types);
  h.AddArray(std::string(bk::kUpTypes), up_types);
  h.AddArray(std::string(bk::kDownTypes), down_types);
  if (neurons) h.AddBool(std::string(expert_keys::kNeuronBundles), true);
  AddMissCurve(sum.miss_curve, h);

  // The tensor table: resident tensors in file order, the expert orders, then the records.
  std::vector<const GgufTensorInfo*> resident;
  for (const GgufTensorInfo& t : src.tensors()) {
    if (IsStackedExpert(t.name, c.n_layer)) continue;
    h.AddTensorInfo(t.name, t.type, t.dims, t.n_bytes);
    resident.push_back(&t);
    sum.resident_bytes += t.n_bytes;
  }
  const auto n_expert = static_cast<uint64_t>(c.n_expert);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    h.AddTensorInfo(ExpertIdsTensorName(il), TensorType::kI32, {n_expert},
                    n_expert * sizeof(int32_t));
  }
  for (int64_t il = 0; il < c.n_layer; ++il) {
    h.AddTensorInfo(ExpertBundlesTensorName(il), TensorType::kI8, {record_bytes[il], n_expert},
                    record_bytes[il] * n_expert);
    sum.bundle_bytes += record_bytes[il] * n_expert;
  }

  SPARROW_RETURN_IF_ERROR(out.Begin(o.output));
  for (const GgufTensorInfo* t : resident) SPARROW_RETURN_IF_ERROR(out.Append(t->data, t->n_bytes));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    SPARROW_RETURN_IF_ERROR(out.Append(orders[il].data(), n_expert * sizeof(int32_t)));
  }
  std::vector<uint8_t> record;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (o.progress) {
      std::fprintf(stderr, "\rsparrow convert: layer %lld/%lld", static_cast<long long>(il + 1),
                   static_cast<long long>(c.n_layer));
    }
    const LayerWeights& l = w.layers[il];
    const size_t gate = l.ffn_gate_exps.row_stride_bytes * c.n_ff_exp;
    const size_t up = l.ffn_up_exps.row_stride_bytes * c.n_ff_exp;
    const size_t down = l.ffn_down_exps.row_stride_bytes * c.n_embd;
    for (int32_t e : orders[il]) {
      record.assign(record_bytes[il], 0);
      std::memcpy(record.data(), ExpertBytes(l.ffn_gate_exps, e, c.n_ff_exp), gate);
      if (neurons) {
        WriteNeuronBundles(c, l, e, down_type[il], record.data() + gate);
      } else {
        std::memcpy(record.data() + gate, ExpertBytes(l.ffn_up_exps, e, c.n_ff_exp), up);
        std::memcpy(record.data() + gate + up, ExpertBytes(l.ffn_down_exps, e, c.n_embd), down);
      }
      SPARROW_RETURN_IF_ERROR(out.Append(record.data(), record.size()));
    }
  }
  if (o.progress) std::fprintf(stderr, "\n");
  SPARROW_RETURN_IF_ERROR(out.Finish());
  return sum;
}

}  // namespace sparrow::tools
