#include "engine/tools/bundle_header.h"

#include "engine/model/neuron_bundles.h"

namespace sparrow::tools {

namespace bk = bundle_keys;

Status WriteBundleHeader(const GgufFile& src, const std::string& path, std::string_view layout,
                         uint32_t io_block, GgufHeader& h) {
  for (const auto& [key, value] : src.metadata()) {
    if (key == "general.alignment" || key.rfind("sparrow.layout", 0) == 0 ||
        key.rfind("sparrow.bundle.", 0) == 0 || key == bk::kPowerInfer) {
      continue;
    }
    SPARROW_RETURN_IF_ERROR(h.AddCopy(key, value).WithContext(path));
  }
  h.SetAlignment(io_block);
  h.AddString(std::string(bk::kLayout), layout);
  h.AddU32(std::string(bk::kVersion), bk::kCurrentVersion);
  h.AddU32(std::string(bk::kIoBlock), io_block);
  return Status::Ok();
}

void AddMissCurve(const std::vector<MissCurvePoint>& curve, GgufHeader& h) {
  if (curve.empty()) return;
  std::vector<float> fraction, rate;
  for (const MissCurvePoint& pt : curve) {
    fraction.push_back(static_cast<float>(pt.cache_fraction));
    rate.push_back(static_cast<float>(pt.miss_rate));
  }
  h.AddArray(std::string(bk::kMissFraction), fraction);
  h.AddArray(std::string(bk::kMissRate), rate);
}

Status CheckRecordOrders(const std::vector<std::vector<int32_t>>& orders, int64_t n,
                         std::string_view what) {
  std::vector<uint8_t> seen;
  for (size_t il = 0; il < orders.size(); ++il) {
    bool ok = static_cast<int64_t>(orders[il].size()) == n;
    seen.assign(n, 0);
    for (int32_t id : orders[il]) {
      if (!ok) break;
      ok = id >= 0 && id < n && !seen[id];
      if (ok) seen[id] = 1;
    }
    if (!ok) {
      return InvalidArgument("the " + std::string(what) + " order of layer " + std::to_string(il) +
                             " is not a permutation of 0.." + std::to_string(n - 1));
    }
  }
  return Status::Ok();
}

}  // namespace sparrow::tools
