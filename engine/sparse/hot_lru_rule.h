#pragma once
// HotLruRule: how a neuron cache's bytes split between the hot segment (each layer's most
// frequent neurons, fixed) and the LRU part, judged by what the LRU finds. One implementation for
// NeuronStore and the miss-curve replay, so the curve predicts what the store does.
//
// An LRU part that is full, was looked up more than twice its size over 16 tokens and found
// under one lookup in twenty thrashes (a token's cold neurons outnumber its slots): its bytes go
// to the hot segment (share 1). That need not last: while the LRU is given away, a ghost of it
// (the neurons it would hold at the configured share, no rows; 8 bytes a neuron of the model)
// goes on counting what it would have found, and when that is one lookup in five or more over 16
// tokens (four times the bar it fell under, so the two do not alternate) the LRU gets its share
// back. Hot plus LRU ran 8.76 tok/s where hot alone ran 5.61 (RESULTS, "Decode speed against
// cache size"): a spell of thrashing must not cost that for good. Not thread-safe.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sparrow {

class HotLruRule {
 public:
  HotLruRule(int64_t n_layer, int64_t n_ff, double configured_share);

  double share() const { return share_; }
  double configured_share() const { return configured_; }
  // True while the LRU's bytes are the hot segment's and the ghost counts instead.
  bool given_away() const { return share_ != configured_; }

  // A layer call while the LRU part is in use: `lookups` cold neurons looked up, `hits` found.
  void CountLru(int64_t lookups, int64_t hits);
  // A layer call while given away: `cold` are the neurons of `layer` the LRU would have been
  // asked for at the configured share (the caller knows its split), `slots` its size then.
  void CountGhost(int32_t layer, std::span<const int32_t> cold, int64_t slots);
  // After each layer call: `lru_slots` and `lru_full` describe the LRU part now. Returns the new
  // share when the window's verdict changes it.
  std::optional<double> EndCall(int64_t lru_slots, bool lru_full);

  // The last window's figures, for the log: lookups and hits (the ghost's when given away).
  int64_t last_lookups() const { return last_lookups_; }
  int64_t last_hits() const { return last_hits_; }

 private:
  void GhostUse(int64_t key, int64_t slots);
  void GhostUnlink(int64_t key);

  const int64_t n_layer_, n_ff_;
  const double configured_;
  double share_;
  int64_t calls_ = 0, lookups_ = 0, hits_ = 0;
  int64_t last_lookups_ = 0, last_hits_ = 0;
  // The ghost LRU over layer * n_ff + neuron: links, or kOut when absent; allocated while given
  // away.
  std::vector<int32_t> prev_, next_;
  int32_t head_ = -1, tail_ = -1;
  int64_t size_ = 0;
};

}  // namespace sparrow
