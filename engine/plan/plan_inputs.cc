#include "engine/plan/plan_inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/model/model.h"
#include "engine/sparse/activation_profile.h"
#include "engine/sparse/sparse_plan.h"

namespace sparrow::plan {
namespace {

uint64_t RowBytes(TensorType type, int64_t cols) {
  auto t = GetTensorTypeTraits(type);
  return t ? static_cast<uint64_t>(cols) / t->block_elems * t->block_bytes : 0;
}

uint64_t MatrixBytes(const kernels::WeightMatrix& w) {
  return w.data ? RowBytes(w.type, w.cols) * static_cast<uint64_t>(w.rows) : 0;
}

void Add(std::vector<TypedBytes>& v, TensorType type, uint64_t bytes) {
  if (bytes == 0) return;
  for (TypedBytes& b : v) {
    if (b.type == type) {
      b.bytes += bytes;
      return;
    }
  }
  v.push_back({type, bytes});
}

// A measured curve, with the ends (no cache, every bundle) added when missing.
std::vector<CachePoint> CurveWithEnds(const std::vector<float>& fraction,
                                      const std::vector<float>& rate) {
  std::vector<CachePoint> out;
  if (fraction.front() > 0) out.push_back({0.0, 1.0});
  for (size_t i = 0; i < fraction.size(); ++i) {
    out.push_back({fraction[i], std::clamp<double>(rate[i], 0, 1)});
  }
  if (out.back().fraction < 1) out.push_back({1.0, 0.0});
  return out;
}

// The profile's miss curve under the store's default policy (a hot half plus the LRU) when it
// has one, else under the LRU alone; the ends (no cache, every bundle) are added when missing.
std::vector<CachePoint> ProfileCurve(const ActivationProfile& p, std::string* source) {
  const bool hot_half = p.miss_rate_hot_half.size() == p.miss_fraction.size();
  const std::vector<float>& rate = hot_half ? p.miss_rate_hot_half : p.miss_rate;
  *source = hot_half ? "profile (hot half + LRU)" : "profile (LRU)";
  return CurveWithEnds(p.miss_fraction, rate);
}

}  // namespace

std::vector<CachePoint> UniformMissCurve() {
  std::vector<CachePoint> out;
  for (int i = 0; i <= 20; ++i) out.push_back({i / 20.0, 1.0 - i / 20.0});
  return out;
}

Result<PlanInputs> MakePlanInputs(const Model& model, const ActivationProfile* profile,
                                  const HardwareProfile& hw, const PlanInputsOptions& options) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const NeuronBundleLayout* layout = w.bundles.get();
  PlanInputs in;
  in.model_name = c.name;
  in.powerinfer = c.powerinfer || (layout && layout->powerinfer);
  in.converted = layout != nullptr;
  in.n_layer = c.n_layer;
  in.n_ff = c.n_ff;
  in.n_embd = c.n_embd;
  in.n_ctx = c.n_ctx_train;
  in.io_queue_depth = std::max(1, options.io_queue_depth);
  in.kv_bytes_per_token =
      static_cast<uint64_t>(c.n_layer * KvBytesPerLayerPosition(options.kv_types, c.kv_dim()));
  in.hw = hw;
  // The overhead belongs to the file it was measured on (a path as given to profile-hw).
  namespace fs = std::filesystem;
  if (hw.store_token_overhead_seconds > 0 && !hw.store_model.empty() &&
      fs::path(hw.store_model).filename() == fs::path(model.file().path()).filename()) {
    in.token_overhead_s = hw.store_token_overhead_seconds;
  }

  if (profile && (profile->n_layer != c.n_layer || profile->n_ff != c.n_ff)) {
    return InvalidArgument("the profile is for " + std::to_string(profile->n_layer) +
                           " layers of " + std::to_string(profile->n_ff) +
                           " neurons; the model has " + std::to_string(c.n_layer) + " of " +
                           std::to_string(c.n_ff));
  }
  // A PowerInfer file's share: the caller's, else what `convert --calibrate` measured.
  const double active_share = options.active_share > 0 ? options.active_share
                              : layout                 ? layout->active_share
                                                       : 0;
  if (in.powerinfer && !(active_share > 0 && active_share <= 1)) {
    return InvalidArgument(
        "a PowerInfer file's predictor chooses its neurons, and the file does not say how many: "
        "pass the share active per token (--active-share, in (0, 1]; `sparrow bench --json` "
        "reports it as active_fraction), or convert it with --calibrate, which records it");
  }
  const bool gated = c.ffn_kind == FfnKind::kSwiGlu || c.ffn_kind == FfnKind::kGeGlu;
  // A converted MoE file: its records are experts, n_expert_used of n_expert per token, as a
  // PowerInfer file's are neurons its predictor chooses.
  const bool experts = layout && layout->experts;
  if (c.n_expert > 0 && !experts) {
    return Unsupported(
        "the planner plans a mixture-of-experts model whose experts are on flash: "
        "convert it (sparrow convert) and run it with --cache-mb");
  }
  if (!in.powerinfer && !experts && !gated) {
    return Unsupported("the planner handles SwiGLU and GeGLU models and PowerInfer files, not '" +
                       std::string(c.arch->name) + "' ones yet");
  }
  if (experts) {
    if (profile) {
      return InvalidArgument(
          "a mixture-of-experts file takes no activation profile: its router "
          "chooses the experts, and convert --calibrate measured how");
    }
    in.n_ff = c.n_expert;
  }

  // Bytes a decoded token reads whole, and the rows of one active neuron.
  uint64_t down_copy = 0;
  for (const LayerWeights& l : w.layers) {
    for (const auto* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.pred_fc1, &l.pred_fc2}) {
      Add(in.dense, m->type, MatrixBytes(*m));
    }
    if (experts) {
      const LayerBundles& lb = layout->layers[&l - w.layers.data()];
      Add(in.dense, l.ffn_gate_inp.type, MatrixBytes(l.ffn_gate_inp));
      Add(in.neuron_rows, lb.gate_type, RowBytes(lb.gate_type, c.n_embd) * c.n_ff_exp);
      Add(in.neuron_rows, lb.up_type, RowBytes(lb.up_type, c.n_embd) * c.n_ff_exp);
      Add(in.neuron_rows, lb.down_type, RowBytes(lb.down_type, c.n_ff_exp) * c.n_embd);
      in.record_bytes = std::max<uint64_t>(in.record_bytes, lb.record_bytes);
      in.bundle_bytes += lb.record_bytes * lb.neuron_ids.size();
    } else if (layout) {
      const LayerBundles& lb = layout->layers[&l - w.layers.data()];
      if (layout->gate_in_bundle) {
        Add(in.neuron_rows, lb.gate_type, RowBytes(lb.gate_type, c.n_embd));
      } else {
        Add(in.dense, l.ffn_gate.type, MatrixBytes(l.ffn_gate));
      }
      Add(in.neuron_rows, lb.up_type, RowBytes(lb.up_type, c.n_embd));
      Add(in.neuron_rows, lb.down_type, RowBytes(lb.down_type, c.n_embd));
      in.record_bytes = std::max<uint64_t>(in.record_bytes, lb.record_bytes);
      in.bundle_bytes += lb.record_bytes * lb.neuron_ids.size();
    } else {
      if (in.powerinfer) {
        Add(in.neuron_rows, l.ffn_gate.type, RowBytes(l.ffn_gate.type, c.n_embd));
      } else {
        Add(in.dense, l.ffn_gate.type, MatrixBytes(l.ffn_gate));
      }
      const TensorType down = in.powerinfer ? l.ffn_down_t.type : DownRowsType(c, l);
      Add(in.neuron_rows, l.ffn_up.type, RowBytes(l.ffn_up.type, c.n_embd));
      Add(in.neuron_rows, down, RowBytes(down, c.n_embd));
      // Mapped whole: the FFN's bytes as stored (gate stays with the resident weights).
      const uint64_t ffn = MatrixBytes(l.ffn_up) + MatrixBytes(l.ffn_down) +
                           MatrixBytes(l.ffn_down_t) +
                           (in.powerinfer ? MatrixBytes(l.ffn_gate) : 0);
      in.bundle_bytes += ffn;
      if (!in.powerinfer) down_copy += RowBytes(down, c.n_embd) * static_cast<uint64_t>(c.n_ff);
    }
  }
  Add(in.dense, w.output.type, MatrixBytes(w.output));
  for (TypedBytes& b : in.neuron_rows) b.bytes /= static_cast<uint64_t>(c.n_layer);
  if (!layout)
    in.record_bytes = BundleRecordBytes(
        [&] {
          uint64_t raw = 0;
          for (const TypedBytes& b : in.neuron_rows) raw += b.bytes;
          return raw;
        }(),
        4096);

  uint64_t file_bytes = 0;
  for (const GgufTensorInfo& t : model.file().tensors()) file_bytes += t.n_bytes;
  in.resident_bytes = file_bytes > in.bundle_bytes ? file_bytes - in.bundle_bytes : 0;
  // Activations of one prompt chunk (residual, attention, FFN hidden, logits) in f32, and the
  // store's staging buffer of one layer's records: an estimate, not an account.
  in.scratch_bytes = static_cast<uint64_t>(options.prompt_chunk) *
                     static_cast<uint64_t>(6 * c.n_embd + 3 * c.n_ff + c.n_vocab) * sizeof(float);
  // The store's staging of one layer; an MoE step reads its experts 64 MiB at a time.
  if (layout) {
    in.scratch_bytes += experts ? std::min<uint64_t>(in.record_bytes * in.n_ff, uint64_t{64} << 20)
                                : in.record_bytes * static_cast<uint64_t>(c.n_ff);
  }

  // The levels the plan may choose.
  if (experts) {
    const double share = static_cast<double>(c.n_expert_used) / static_cast<double>(c.n_expert);
    in.levels.push_back({1 - share, share, true, 0});
  } else if (in.powerinfer) {
    in.levels.push_back({1 - active_share, active_share, true, 0});
  } else {
    if (!layout) in.levels.push_back({0, 1, false, 0});  // dense: whole matrices
    if (profile) {
      for (float s : profile->levels) {
        in.levels.push_back({s, 1.0 - s, true, layout ? 0 : down_copy});
      }
    }
    if (in.levels.empty()) {
      return InvalidArgument(
          "a converted SwiGLU model runs sparse: pass its activation profile (--profile, from "
          "`sparrow profile`) so the planner knows the sparsity levels");
    }
  }

  // The cache sizes the plan may choose.
  if (!layout) {
    in.cache = {{1.0, 0.0}};
    in.miss_curve_source = "none (not converted: the FFN is mapped whole)";
  } else {
    if (hw.flash.empty()) {
      return InvalidArgument(
          "the hardware profile has no flash rates, which a converted model reads: run "
          "`sparrow profile-hw -m MODEL` to measure them");
    }
    if (profile && !profile->miss_fraction.empty()) {
      in.cache = ProfileCurve(*profile, &in.miss_curve_source);
    } else if (!layout->miss_fraction.empty()) {
      in.cache = CurveWithEnds(layout->miss_fraction, layout->miss_rate);
      in.miss_curve_source = "the converted file's (calibration, hot half + LRU)";
    } else {
      in.cache = UniformMissCurve();
      in.miss_curve_source = "assumed: no locality, a cache of share f misses 1 - f";
    }
  }
  return in;
}

}  // namespace sparrow::plan
