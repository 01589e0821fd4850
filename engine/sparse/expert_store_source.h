#pragma once
// StoreExpertSource: a converted MoE file's expert records served by the NeuronStore (hot experts
// resident, a cache of others, the rest read from flash through the I/O thread), for MoeFfn.
// Records are handed out as they land, so compute overlaps the step's reads, and the next
// layer's guessed experts are read after them (NeuronStore::Prefetch).
#include <memory>
#include <span>
#include <vector>

#include "engine/runtime/moe_ffn.h"
#include "engine/sparse/neuron_store.h"

namespace sparrow {

class StoreExpertSource : public ExpertSource {
 public:
  explicit StoreExpertSource(std::shared_ptr<NeuronStore> store);

  size_t max_records() const override { return max_records_; }
  void Start(int32_t il, std::span<const int32_t> records) override;
  std::span<const int32_t> Ready() override;
  const uint8_t* Record(size_t k) const override { return ptrs_[k]; }
  Status Finish(std::vector<int32_t>* failed) override { return store_->Finish(failed); }
  void Release() override { store_->Release(); }
  void Prefetch(int32_t il, std::span<const int32_t> records) override {
    store_->Prefetch(il, records);
  }
  bool reads_ahead() const override { return store_->reads_ahead(); }

 private:
  std::shared_ptr<NeuronStore> store_;
  size_t max_records_;
  std::vector<const uint8_t*> ptrs_;
  std::vector<int32_t> ready_;
  bool first_ = false;  // the next Ready hands out what Start found in memory
};

}  // namespace sparrow
