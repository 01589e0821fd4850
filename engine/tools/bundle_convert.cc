#include "engine/tools/bundle_convert.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <thread>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/matmul.h"
#include "engine/model/gguf_file_writer.h"
#include "engine/model/model.h"
#include "engine/model/neuron_bundles.h"
#include "engine/sparse/activation_profile.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tools/bundle_header.h"
#include "engine/tools/expert_convert.h"
#include "engine/tools/predictor_frequency.h"

namespace sparrow::tools {
namespace {

namespace bk = bundle_keys;

const uint8_t* Row(const kernels::WeightMatrix& w, int64_t r) {
  return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_stride_bytes;
}

// Neuron orders per layer: the test hook's, the profile's (most frequently active first at the
// level nearest `hot_level`; ties keep file order), or the file's. With --calibrate, the
// calibration's curves and active share go to `sum`.
Result<std::vector<std::vector<int32_t>>> NeuronOrders(const ConvertOptions& o,
                                                       const ModelConfig& c, ConvertSummary* sum) {
  std::vector<std::vector<int32_t>> orders(c.n_layer, std::vector<int32_t>(c.n_ff));
  for (auto& order : orders) std::iota(order.begin(), order.end(), 0);
  bool* by_profile = &sum->ordered_by_profile;
  *by_profile = false;
  if (o.order) {
    for (int64_t il = 0; il < c.n_layer; ++il) orders[il] = o.order(il, c.n_ff);
    return orders;
  }
  if (!o.calibrate.empty()) {
    if (!o.profile.empty()) return InvalidArgument("--calibrate and --profile exclude each other");
    const int threads = o.threads > 0
                            ? o.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    SPARROW_ASSIGN_OR_RETURN(
        PredictorCalibration cal,
        CalibrateByPredictor(o.model, o.calibrate, o.calibrate_tokens, threads));
    *by_profile = true;
    sum->miss_curve = std::move(cal.miss_curve);
    sum->optimum_curve = std::move(cal.optimum_curve);
    sum->active_share = cal.active_share;
    return std::move(cal.orders);
  }
  if (o.profile.empty()) return orders;
  SPARROW_ASSIGN_OR_RETURN(ActivationProfile p, ReadActivationProfile(o.profile, &c));
  size_t level = 0;
  for (size_t i = 1; i < p.levels.size(); ++i) {
    if (std::fabs(p.levels[i] - o.hot_level) < std::fabs(p.levels[level] - o.hot_level)) level = i;
  }
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const float* f = &p.frequency[(level * c.n_layer + il) * c.n_ff];
    std::stable_sort(orders[il].begin(), orders[il].end(),
                     [f](int32_t a, int32_t b) { return f[a] > f[b]; });
  }
  *by_profile = true;
  return orders;
}

// What happens to a source tensor: copied, dropped (its rows go into the bundles), or copied
// with its rows in record order (tensors with one row per neuron that stay resident).
enum class Fate { kCopy, kDrop, kPermuteRows };

Fate FateOf(const std::string& name, int64_t n_layer, bool gate_in_bundle, int64_t* layer) {
  int consumed = 0;
  long long il = -1;
  if (std::sscanf(name.c_str(), "blk.%lld.%n", &il, &consumed) != 1 || consumed == 0 || il < 0 ||
      il >= n_layer) {
    return Fate::kCopy;
  }
  *layer = il;
  const std::string rest = name.substr(consumed);
  if (rest == "ffn_up.weight" || rest == "ffn_down.weight" || rest == "ffn_down_t.weight") {
    return Fate::kDrop;
  }
  if (rest == "ffn_gate.weight") return gate_in_bundle ? Fate::kDrop : Fate::kPermuteRows;
  if (rest == "fc2.weight") return Fate::kPermuteRows;  // the predictor's one row per neuron
  return Fate::kCopy;
}

}  // namespace

Result<ConvertSummary> ConvertToBundles(const ConvertOptions& o) {
  if (o.io_block == 0 || (o.io_block & (o.io_block - 1)) != 0 || o.io_block > (1u << 24)) {
    return InvalidArgument("--io-block " + std::to_string(o.io_block) +
                           " must be a power of two up to 16 MiB");
  }
  if (o.output.empty()) return InvalidArgument("an output path (-o) is needed");
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(o.model));
  const ModelConfig& c = model->config();
  const ModelWeights& w = model->weights();
  const GgufFile& src = model->file();
  if (w.bundles) {
    return InvalidArgument(o.model + " is already converted (to " +
                           (w.bundles->experts ? "expert" : "neuron") + " bundles)");
  }
  if (c.arch->fused_gate_up) {
    return Unsupported(o.model + ": converting '" + std::string(c.arch->name) +
                       "' files (gate and up rows fused in one tensor) is not supported yet");
  }
  if (c.n_expert > 0) return ConvertExpertsToBundles(o, *model);

  ConvertSummary sum;
  sum.n_layer = c.n_layer;
  sum.n_ff = c.n_ff;
  // A predictor chooses neurons before the gate, so the gate rows travel with the neuron; a
  // threshold on the gate's output needs every gate row, which then stays resident.
  sum.gate_in_bundle = c.powerinfer;
  SPARROW_ASSIGN_OR_RETURN(auto orders, NeuronOrders(o, c, &sum));
  SPARROW_RETURN_IF_ERROR(CheckRecordOrders(orders, c.n_ff, "neuron"));

  GgufFileWriter out;
  GgufHeader& h = out.header();
  SPARROW_RETURN_IF_ERROR(WriteBundleHeader(src, o.model, bk::kLayoutName, o.io_block, h));
  h.AddBool(std::string(bk::kGateInBundle), sum.gate_in_bundle);
  if (c.powerinfer) h.AddBool(std::string(bk::kPowerInfer), true);
  std::vector<uint32_t> gate_types, up_types, down_types;
  std::vector<uint64_t> record_bytes(c.n_layer);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& l = w.layers[il];
    gate_types.push_back(static_cast<uint32_t>(l.ffn_gate.type));
    up_types.push_back(static_cast<uint32_t>(l.ffn_up.type));
    down_types.push_back(static_cast<uint32_t>(DownRowsType(c, l)));
    const uint64_t raw = (sum.gate_in_bundle ? kernels::RowBytes(l.ffn_gate.type, c.n_embd) : 0) +
                         kernels::RowBytes(l.ffn_up.type, c.n_embd) +
                         kernels::RowBytes(DownRowsType(c, l), c.n_embd);
    record_bytes[il] = BundleRecordBytes(raw, o.io_block);
    if (il == 0) {
      sum.row_bytes = raw;
      sum.record_bytes = record_bytes[0];
    }
  }
  h.AddArray(std::string(bk::kGateTypes), gate_types);
  h.AddArray(std::string(bk::kUpTypes), up_types);
  h.AddArray(std::string(bk::kDownTypes), down_types);
  AddMissCurve(sum.miss_curve, h);
  if (sum.active_share > 0) {
    h.AddF32(std::string(bk::kActiveShare), static_cast<float>(sum.active_share));
  }

  // The tensor table: resident tensors in file order, the neuron orders, then the records.
  struct Resident {
    const GgufTensorInfo* t;
    Fate fate;
    int64_t layer;
  };
  std::vector<Resident> resident;
  for (const GgufTensorInfo& t : src.tensors()) {
    int64_t layer = -1;
    const Fate fate = FateOf(t.name, c.n_layer, sum.gate_in_bundle, &layer);
    if (fate == Fate::kDrop) continue;
    if (fate == Fate::kPermuteRows && t.rows() != static_cast<uint64_t>(c.n_ff)) {
      return Corrupt(o.model + ": tensor '" + t.name + "' has " + std::to_string(t.rows()) +
                     " rows, expected one per neuron (" + std::to_string(c.n_ff) + ")");
    }
    h.AddTensorInfo(t.name, t.type, t.dims, t.n_bytes);
    resident.push_back({&t, fate, layer});
    sum.resident_bytes += t.n_bytes;
  }
  for (int64_t il = 0; il < c.n_layer; ++il) {
    h.AddTensorInfo(NeuronIdsTensorName(il), TensorType::kI32, {static_cast<uint64_t>(c.n_ff)},
                    c.n_ff * sizeof(int32_t));
  }
  for (int64_t il = 0; il < c.n_layer; ++il) {
    h.AddTensorInfo(BundlesTensorName(il), TensorType::kI8,
                    {record_bytes[il], static_cast<uint64_t>(c.n_ff)}, record_bytes[il] * c.n_ff);
    sum.bundle_bytes += record_bytes[il] * c.n_ff;
  }

  SPARROW_RETURN_IF_ERROR(out.Begin(o.output));
  for (const Resident& r : resident) {
    if (r.fate == Fate::kCopy) {
      SPARROW_RETURN_IF_ERROR(out.Append(r.t->data, r.t->n_bytes));
      continue;
    }
    const uint64_t row = r.t->row_bytes();
    for (int32_t id : orders[r.layer]) {
      SPARROW_RETURN_IF_ERROR(out.Append(r.t->data + static_cast<size_t>(id) * row, row));
    }
  }
  for (int64_t il = 0; il < c.n_layer; ++il) {
    SPARROW_RETURN_IF_ERROR(out.Append(orders[il].data(), c.n_ff * sizeof(int32_t)));
  }

  std::vector<uint8_t> owned, chunk;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (o.progress) {
      std::fprintf(stderr, "\rsparrow convert: layer %lld/%lld", static_cast<long long>(il + 1),
                   static_cast<long long>(c.n_layer));
    }
    const LayerWeights& l = w.layers[il];
    const kernels::WeightMatrix down = DownRows(c, l, std::nullopt, owned);
    const uint64_t rec = record_bytes[il];
    const uint64_t gate_bytes =
        sum.gate_in_bundle ? kernels::RowBytes(l.ffn_gate.type, c.n_embd) : 0;
    const uint64_t up_bytes = kernels::RowBytes(l.ffn_up.type, c.n_embd);
    const uint64_t down_bytes = kernels::RowBytes(down.type, c.n_embd);
    const int64_t per_chunk = std::max<int64_t>(1, static_cast<int64_t>((8u << 20) / rec));
    for (int64_t k0 = 0; k0 < c.n_ff; k0 += per_chunk) {
      const int64_t n = std::min(per_chunk, c.n_ff - k0);
      chunk.assign(static_cast<size_t>(n * rec), 0);
      for (int64_t k = 0; k < n; ++k) {
        const int32_t id = orders[il][k0 + k];
        uint8_t* r = chunk.data() + k * rec;
        if (gate_bytes) std::memcpy(r, Row(l.ffn_gate, id), gate_bytes);
        std::memcpy(r + gate_bytes, Row(l.ffn_up, id), up_bytes);
        std::memcpy(r + gate_bytes + up_bytes, Row(down, id), down_bytes);
      }
      SPARROW_RETURN_IF_ERROR(out.Append(chunk.data(), chunk.size()));
    }
  }
  if (o.progress) std::fprintf(stderr, "\n");
  SPARROW_RETURN_IF_ERROR(out.Finish());
  return sum;
}

}  // namespace sparrow::tools
