#include "engine/sparse/neuron_store.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "engine/memory/huge_pages.h"

namespace sparrow {
namespace {

size_t PageRoundUp(size_t n) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

// Address space for `bytes` that costs nothing until written; null when refused.
uint8_t* Reserve(size_t bytes) {
  void* p = mmap(nullptr, PageRoundUp(bytes), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

Result<std::unique_ptr<NeuronStore>> NeuronStore::Open(const Model& model,
                                                       const NeuronStoreOptions& options) {
  const auto& bundles = model.weights().bundles;
  if (!bundles) {
    return InvalidArgument(model.file().path() +
                           " keeps its FFN in memory; --cache-mb needs a file converted to "
                           "neuron bundles: sparrow convert -m MODEL -o MODEL.sparrow.gguf");
  }
  if (!(options.hot_share >= 0 && options.hot_share <= 1)) {
    return InvalidArgument("hot share " + std::to_string(options.hot_share) + " must be in [0, 1]");
  }
  Env* env = options.env ? options.env : Env::Default();
  SPARROW_ASSIGN_OR_RETURN(
      std::unique_ptr<RandomAccessFile> file,
      env->OpenRandomAccess(model.file().path(), FileOptions{options.direct, options.queue_depth}));
  auto reader =
      std::make_unique<BundleReader>(*bundles, std::move(file), env, options.max_read_bytes);
  std::unique_ptr<NeuronStore> store(new NeuronStore(*bundles, std::move(reader), options));
  for (int64_t il = 0; il < store->n_layer_; ++il) {
    store->hot_base_[il] = Reserve(static_cast<size_t>(store->n_ff_) * store->record_bytes_);
    if (!store->hot_base_[il]) {
      return ResourceExhausted("cannot reserve address space for layer " + std::to_string(il) +
                               "'s hot neurons: " + std::strerror(errno));
    }
  }
  SPARROW_RETURN_IF_ERROR(store->Resize(options.cache_bytes));
  // The hot segment is read whole at open (sequential reads), not a little per step.
  for (int64_t il = 0; il < store->n_layer_; ++il) {
    SPARROW_RETURN_IF_ERROR(store->AdjustHot(static_cast<int32_t>(il), SIZE_MAX));
  }
  const NeuronStoreStats st = store->stats();
  spdlog::info(
      "neuron store: {}: FFN on flash, {:.1f} MiB in memory ({:.1f} MiB hot, {} cache slots), "
      "reads {} through {}",
      model.file().path(), static_cast<double>(st.capacity_bytes) / 1048576.0,
      static_cast<double>(st.hot_bytes) / 1048576.0, st.cache.capacity,
      st.direct ? "O_DIRECT" : "buffered (O_DIRECT refused; pages dropped after each read)",
      st.read_backend);
  return store;
}

NeuronStore::NeuronStore(const NeuronBundleLayout& layout, std::unique_ptr<BundleReader> reader,
                         const NeuronStoreOptions& options)
    : layout_(layout),
      n_layer_(static_cast<int64_t>(layout.layers.size())),
      n_ff_(layout.layers.empty() ? 0 : static_cast<int64_t>(layout.layers[0].neuron_ids.size())),
      record_bytes_(static_cast<size_t>(layout.largest_record_bytes())),
      hot_share_(options.hot_share),
      reader_(std::move(reader)),
      cache_(std::make_unique<NeuronCache>(n_layer_, n_ff_, record_bytes_, 0)),
      hot_base_(static_cast<size_t>(n_layer_), nullptr),
      hot_(static_cast<size_t>(n_layer_), 0),
      env_(options.env ? options.env : Env::Default()),
      read_ahead_(options.read_ahead),
      io_(std::make_unique<IoThread>()) {
  if (options.adaptive) rule_.emplace(n_layer_, n_ff_, options.hot_share);
}

NeuronStore::~NeuronStore() {
  if (reading_) (void)Finish(&read_failed_);
  SettlePrefetch();
  io_.reset();
  for (uint8_t* p : hot_base_) {
    if (p) munmap(p, PageRoundUp(static_cast<size_t>(n_ff_) * record_bytes_));
  }
  if (staging_) munmap(staging_, staging_bytes_);
}

int64_t NeuronStore::HotRecordsFor(size_t cache_bytes) const {
  return HotRecordsAt(cache_bytes, hot_share_);
}

int64_t NeuronStore::HotRecordsAt(size_t cache_bytes, double share) const {
  if (n_layer_ == 0) return 0;
  const double hot = static_cast<double>(cache_bytes) * share;
  const auto per_layer = static_cast<int64_t>(hot / static_cast<double>(n_layer_) /
                                              static_cast<double>(record_bytes_));
  return std::clamp<int64_t>(per_layer, 0, n_ff_);
}

uint8_t* NeuronStore::HotRecord(int32_t layer, int64_t k) const {
  return hot_base_[layer] + static_cast<size_t>(k) * layout_.layers[layer].record_bytes;
}

void NeuronStore::DropHotPages(int32_t layer, int64_t keep, int64_t end) {
  const uint64_t rec = layout_.layers[layer].record_bytes;
  // Only pages wholly past the kept records go back to the OS.
  const size_t from = PageRoundUp(static_cast<size_t>(keep) * rec);
  const size_t to = PageRoundUp(static_cast<size_t>(end) * rec);
  if (to <= from) return;
  madvise(hot_base_[layer] + from, to - from, MADV_DONTNEED);
  // A huge page straddling the cut would fault back in whole, past what is kept.
  const auto base = reinterpret_cast<uintptr_t>(hot_base_[layer]);
  const uintptr_t cut = std::max(base, (base + from) / kHugePageBytes * kHugePageBytes);
  const uintptr_t stop = base + PageRoundUp(static_cast<size_t>(n_ff_) * rec);
  madvise(reinterpret_cast<void*>(cut), stop - cut, MADV_NOHUGEPAGE);
}

Status NeuronStore::ReadRecords(int32_t layer, int64_t first, int64_t last, uint8_t* base,
                                int64_t* first_failed) {
  const uint64_t rec = layout_.layers[layer].record_bytes;
  std::vector<int32_t> ids(static_cast<size_t>(last - first));
  std::iota(ids.begin(), ids.end(), static_cast<int32_t>(first));
  std::vector<uint8_t*> dst(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) dst[k] = base + static_cast<size_t>(ids[k]) * rec;
  std::vector<int32_t> failed;
  Status st;
  const uint64_t t0 = env_->NowMicros();
  io_->Run([&] { st = reader_->Read(layer, ids, dst.data(), &failed); });
  Waited(t0);
  for (int32_t k : failed) *first_failed = std::min<int64_t>(*first_failed, ids[k]);
  return st;
}

uint64_t NeuronStore::held_bytes() const {
  return stats().held_bytes();
}

bool NeuronStore::ShrinkNow(uint64_t bytes) {
  if (bytes >= capacity_bytes()) return true;
  const Status st = Resize(bytes);
  if (!st.ok())
    spdlog::warn("memory: neuron cache shrink to {} bytes failed: {}", bytes, st.ToString());
  return st.ok();
}

Status NeuronStore::Resize(uint64_t cache_bytes) {
  const int64_t hot = HotRecordsFor(cache_bytes);
  const size_t hot_bytes = static_cast<size_t>(hot * n_layer_) * record_bytes_;
  // The hot segment's share first, so the two never hold more than asked for between them.
  {
    std::unique_lock<std::mutex> lock(hot_mu_);
    hot_target_ = hot;
    // Shrinking gives the pages back now (RSS falls), once the step's layer is released.
    hot_cv_.wait(lock, [&] { return !pinned_; });
    for (int64_t il = 0; il < n_layer_; ++il) {
      if (hot_[il] <= hot) continue;
      DropHotPages(static_cast<int32_t>(il), hot, hot_[il]);
      hot_total_ -= hot_[il] - hot;
      hot_[il] = hot;
    }
  }
  capacity_bytes_ = cache_bytes;
  // The cache needs no room for what the hot segment holds.
  const size_t rest = static_cast<size_t>((n_ff_ - hot) * n_layer_) * record_bytes_;
  return cache_->Resize(std::min(cache_bytes > hot_bytes ? cache_bytes - hot_bytes : 0, rest));
}

Status NeuronStore::AdjustHot(int32_t layer, size_t max_bytes) {
  int64_t have = 0;
  const int64_t target = hot_target_;
  {
    std::lock_guard<std::mutex> lock(hot_mu_);
    have = hot_[layer];
  }
  if (have >= target) return Status::Ok();
  const LayerBundles& lb = layout_.layers[layer];
  const int64_t room = static_cast<int64_t>(std::max<size_t>(1, max_bytes / lb.record_bytes));
  const int64_t want = std::min(target, have + room);
  // Huge pages up to the target: the segment fills to it, and no further.
  AdviseHugePages(hot_base_[layer] + static_cast<size_t>(have) * lb.record_bytes,
                  static_cast<size_t>(target - have) * lb.record_bytes);
  // The segment is a prefix: it ends before the first record that failed.
  int64_t got = want;
  Status st = ReadRecords(layer, have, want, hot_base_[layer], &got);
  std::lock_guard<std::mutex> lock(hot_mu_);
  // A shrink may have come in meanwhile: keep no more than the target.
  got = std::min<int64_t>(got, hot_target_);
  if (got > hot_[layer]) {
    hot_total_ += got - hot_[layer];
    hot_[layer] = got;
  }
  // Pages written past what is kept (a shrink or a failed read cut the segment short) go back.
  DropHotPages(layer, hot_[layer], want);
  return st;
}

Status NeuronStore::Acquire(int32_t layer, std::span<const int32_t> ids, const uint8_t** records,
                            std::vector<int32_t>* failed) {
  Start(layer, ids, records);
  return Finish(failed);
}

void NeuronStore::Prefetch(int32_t layer, std::span<const int32_t> ids) {
  SettlePrefetch();
  if (!read_ahead_ || layer < 0 || layer >= n_layer_) return;
  const int64_t hot = hot_[layer];
  pf_ids_.clear();
  for (int32_t id : ids) {
    if (id >= hot) pf_ids_.push_back(id);
  }
  // Scored whether read or not: the guessed records not in memory.
  guessed_layer_ = layer;
  guessed_.clear();
  prefetched_.clear();
  for (int32_t id : pf_ids_) {
    if (!cache_->Contains(layer, id)) guessed_.push_back(id);
  }
  std::sort(guessed_.begin(), guessed_.end());
  if (!read_ahead_on_ || pf_ids_.empty()) return;
  pf_slots_.assign(pf_ids_.size(), nullptr);
  pf_misses_.clear();
  cache_->Reserve(layer, pf_ids_, pf_slots_.data(), &pf_misses_);
  pf_read_ids_.clear();
  pf_dst_.clear();
  for (int32_t j : pf_misses_) {
    pf_read_ids_.push_back(pf_ids_[j]);
    pf_dst_.push_back(pf_slots_[j]);
  }
  pf_layer_ = layer;
  pf_active_ = true;
  pf_failed_.clear();
  pf_status_ = Status::Ok();
  {
    std::lock_guard<std::mutex> lock(pf_mu_);
    pf_done_ = pf_read_ids_.empty();
  }
  if (pf_read_ids_.empty()) return;
  prefetch_reads_ += static_cast<int64_t>(pf_read_ids_.size());
  io_->Post([this, layer] {
    pf_status_ = reader_->Read(layer, pf_read_ids_, pf_dst_.data(), &pf_failed_);
    {
      std::lock_guard<std::mutex> lock(pf_mu_);
      pf_done_ = true;
    }
    pf_cv_.notify_all();
  });
}

void NeuronStore::ScoreGuess(int32_t layer, std::span<const int32_t> ids) {
  if (guessed_layer_ != layer) return;
  guessed_layer_ = -1;
  int64_t right = 0, used = 0;
  for (int32_t id : ids) {
    right += std::binary_search(guessed_.begin(), guessed_.end(), id);
    used += std::binary_search(prefetched_.begin(), prefetched_.end(), id);
  }
  guesses_ += static_cast<int64_t>(guessed_.size());
  guesses_right_ += right;
  prefetch_used_ += used;
  window_guesses_ += static_cast<int64_t>(guessed_.size());
  window_right_ += right;
  if (window_guesses_ < kGuessWindow) return;
  // Reads on guesses pay while most are right; below that they take the bandwidth and slots
  // the step's own reads need (measured: bench/RESULTS.md, "Experts on flash").
  const bool on = static_cast<double>(window_right_) >=
                  kReadAheadMinAccuracy * static_cast<double>(window_guesses_);
  if (on != read_ahead_on_) {
    spdlog::info("read-ahead: {} of the last {} guessed records were used; reads on guesses {}",
                 window_right_, window_guesses_, on ? "resume" : "pause (guesses still scored)");
  }
  read_ahead_on_ = on;
  window_guesses_ = window_right_ = 0;
}

void NeuronStore::SettlePrefetch() {
  if (!pf_active_) return;
  const uint64_t t0 = env_->NowMicros();
  {
    std::unique_lock<std::mutex> lock(pf_mu_);
    pf_cv_.wait(lock, [&] { return pf_done_; });
  }
  Waited(t0);
  pf_active_ = false;
  // Failed reads (indices into pf_read_ids_) drop their slots; the record is read on demand.
  pf_failed_ids_.clear();
  for (int32_t r : pf_failed_) pf_failed_ids_.push_back(pf_misses_[r]);
  cache_->Release(pf_layer_, pf_ids_, pf_slots_, pf_failed_ids_);
  prefetched_.clear();
  for (size_t r = 0; r < pf_read_ids_.size(); ++r) {
    if (std::find(pf_failed_.begin(), pf_failed_.end(), static_cast<int32_t>(r)) ==
        pf_failed_.end()) {
      prefetched_.push_back(pf_read_ids_[r]);
    }
  }
  std::sort(prefetched_.begin(), prefetched_.end());
}

void NeuronStore::Start(int32_t layer, std::span<const int32_t> ids, const uint8_t** records) {
  SettlePrefetch();
  ScoreGuess(layer, ids);
  // Growing the hot segment back, a little per step, outside the pinned section.
  Status grow = AdjustHot(layer, size_t{4} << 20);
  (void)grow;  // a failed read leaves the segment shorter; the records are read on demand
  Pin();
  layer_ = layer;
  const int64_t hot = hot_[layer];
  cache_ids_.clear();
  cache_index_.clear();
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] < hot) {
      records[k] = HotRecord(layer, ids[k]);
    } else {
      cache_ids_.push_back(ids[k]);
      cache_index_.push_back(static_cast<int32_t>(k));
    }
  }
  hot_hits_ += static_cast<int64_t>(ids.size() - cache_ids_.size());
  if (rule_ && rule_->given_away()) CountGhost(layer, ids);
  slots_.resize(cache_ids_.size());
  misses_.clear();
  cache_->Acquire(layer, cache_ids_, slots_.data(), &misses_);
  // Misses without a slot are read into the store's own buffer, for this step only.
  size_t bypassed = 0;
  for (uint8_t* s : slots_) bypassed += s == nullptr;
  const size_t rec = layout_.layers[layer].record_bytes;
  if (bypass_.size() < bypassed * rec) bypass_.resize(bypassed * rec);
  read_ids_.clear();
  read_dst_.clear();
  read_from_.clear();
  size_t b = 0;
  for (size_t j = 0; j < slots_.size(); ++j) {
    if (slots_[j] == nullptr) {
      read_ids_.push_back(cache_ids_[j]);
      read_dst_.push_back(bypass_.data() + b++ * rec);
      read_from_.push_back(static_cast<int32_t>(j));
    }
  }
  for (int32_t j : misses_) {
    read_ids_.push_back(cache_ids_[j]);
    read_dst_.push_back(slots_[j]);
    read_from_.push_back(j);
  }
  for (size_t j = 0; j < slots_.size(); ++j) records[cache_index_[j]] = slots_[j];
  pending_.clear();
  for (size_t r = 0; r < read_dst_.size(); ++r) {
    records[cache_index_[read_from_[r]]] = read_dst_[r];
    pending_.push_back(cache_index_[read_from_[r]]);
  }
  read_failed_.clear();
  read_status_ = Status::Ok();
  arrivals_.Reset(read_ids_.size());
  reading_ = true;
  if (read_ids_.empty()) {
    arrivals_.Close();
    return;
  }
  io_->Post([this, layer] {
    io_indices_.resize(read_ids_.size());
    read_status_ = reader_->Read(layer, read_ids_, read_dst_.data(), &read_failed_,
                                 [this](const int32_t* rs, size_t n, bool ok) {
                                   for (size_t i = 0; i < n; ++i) io_indices_[i] = pending_[rs[i]];
                                   arrivals_.Push(io_indices_.data(), n, ok);
                                 });
    arrivals_.Close();
  });
}

std::span<const int32_t> NeuronStore::Arrived(size_t want) {
  const uint64_t t0 = env_->NowMicros();
  const std::span<const int32_t> landed = arrivals_.Take(want);
  Waited(t0);
  return landed;
}

void NeuronStore::Waited(uint64_t since) {
  wait_micros_ += env_->NowMicros() - since;
}

Status NeuronStore::Finish(std::vector<int32_t>* failed) {
  if (!reading_) return Status::Ok();
  const uint64_t t0 = env_->NowMicros();
  arrivals_.WaitClosed();
  Waited(t0);
  reading_ = false;
  cache_failed_.clear();
  for (int32_t r : read_failed_) {
    const int32_t j = read_from_[r];
    failed->push_back(cache_index_[j]);
    if (slots_[j] != nullptr) cache_failed_.push_back(j);  // the slot is dropped on Release
  }
  return read_status_;
}

void NeuronStore::Release() {
  if (layer_ < 0) return;
  if (reading_) {
    // Released without Finish: the reads still land in the pinned slots; wait for them.
    std::vector<int32_t> failed;
    (void)Finish(&failed);
  }
  cache_->Release(layer_, cache_ids_, slots_, cache_failed_);
  layer_ = -1;
  int64_t hits = 0;
  for (uint8_t* s : slots_) hits += s != nullptr;
  hits -= static_cast<int64_t>(misses_.size());
  Unpin();
  if (rule_) Adapt(hits);
}

void NeuronStore::CountGhost(int32_t layer, std::span<const int32_t> ids) {
  const int64_t hot = HotRecordsAt(capacity_bytes_, rule_->configured_share());
  ghost_ids_.clear();
  for (int32_t id : ids) {
    if (id >= hot) ghost_ids_.push_back(id);
  }
  const auto hot_bytes = static_cast<size_t>(hot * n_layer_) * record_bytes_;
  const size_t lru_bytes = capacity_bytes_ > hot_bytes ? capacity_bytes_ - hot_bytes : 0;
  rule_->CountGhost(layer, ghost_ids_, static_cast<int64_t>(lru_bytes / record_bytes_));
}

void NeuronStore::Adapt(int64_t hits) {
  if (!rule_->given_away()) rule_->CountLru(static_cast<int64_t>(cache_ids_.size()), hits);
  const NeuronCacheStats c = cache_->stats();
  const std::optional<double> share = rule_->EndCall(c.capacity, c.used >= c.capacity);
  if (!share) return;
  if (rule_->given_away()) {
    spdlog::info(
        "neuron cache: its LRU part found {} of {} lookups over the last 16 tokens (a token's "
        "misses outnumber its {} slots); its {:.1f} MiB go to the hot segment",
        rule_->last_hits(), rule_->last_lookups(), c.capacity,
        static_cast<double>(c.capacity) * record_bytes_ / 1048576.0);
  } else {
    spdlog::info(
        "neuron cache: an LRU part would have found {} of {} lookups over the last 16 tokens; "
        "it gets its share back (hot share {:.2f})",
        rule_->last_hits(), rule_->last_lookups(), *share);
  }
  hot_share_ = *share;
  (void)Resize(capacity_bytes_);
}

void NeuronStore::Pin() {
  std::lock_guard<std::mutex> lock(hot_mu_);
  pinned_ = true;
}

void NeuronStore::Unpin() {
  {
    std::lock_guard<std::mutex> lock(hot_mu_);
    pinned_ = false;
  }
  hot_cv_.notify_all();
}

void NeuronStore::set_layer_staging(bool allowed) {
  layer_staging_ = allowed;
  if (allowed || staging_ == nullptr) return;
  munmap(staging_, staging_bytes_);
  staging_ = nullptr;
  staging_bytes_ = 0;
  staging_mapped_ = 0;
}

Status NeuronStore::ReadLayer(int32_t layer, const uint8_t** records) {
  const LayerBundles& lb = layout_.layers[layer];
  const size_t need = static_cast<size_t>(n_ff_) * lb.record_bytes;
  if (staging_bytes_ < need) {
    if (staging_) munmap(staging_, staging_bytes_);
    staging_bytes_ = PageRoundUp(static_cast<size_t>(n_ff_) * record_bytes_);
    staging_ = Reserve(staging_bytes_);
    if (!staging_) {
      staging_bytes_ = 0;
      staging_mapped_ = 0;
      return ResourceExhausted("no memory to stage layer " + std::to_string(layer) + " (" +
                               std::to_string(need) + " bytes)");
    }
    staging_mapped_ = staging_bytes_;
  }
  // Records the hot segment holds are copied, the rest read in runs of adjacent records.
  Pin();
  const int64_t hot = hot_[layer];
  if (hot > 0) std::memcpy(staging_, hot_base_[layer], static_cast<size_t>(hot) * lb.record_bytes);
  Unpin();
  int64_t first_failed = n_ff_;
  SPARROW_RETURN_IF_ERROR(ReadRecords(layer, hot, n_ff_, staging_, &first_failed));
  ++layer_reads_;
  *records = staging_;
  return Status::Ok();
}

NeuronStoreStats NeuronStore::stats() const {
  NeuronStoreStats st;
  st.cache = cache_->stats();
  st.reads = reader_->stats();
  st.hot_hits = hot_hits_;
  st.hot_records = hot_total_;
  st.hot_bytes = static_cast<size_t>(st.hot_records) * record_bytes_;
  st.layer_reads = layer_reads_;
  st.wait_micros = wait_micros_;
  st.staging_bytes = staging_mapped_;
  st.capacity_bytes = capacity_bytes_;
  st.hot_share = hot_share_;
  st.direct = reader_->file().direct();
  st.read_backend = reader_->file().read_backend();
  st.prefetch_reads = prefetch_reads_;
  st.prefetch_used = prefetch_used_;
  st.guesses = guesses_;
  st.guesses_right = guesses_right_;
  st.read_ahead_on = read_ahead_on_;
  return st;
}

}  // namespace sparrow
