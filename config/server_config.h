#pragma once
// ServerConfig: every setting of sparrowd, with its default. config_loader.h fills it from
// sparrow.yaml, SPARROW_* environment variables and command-line flags. A plain value type.
#include <cstdint>
#include <string>

namespace sparrow {

struct ServerConfig {
  // Network.
  std::string host = "127.0.0.1";
  int64_t port = 8080;        // HTTP; 0 picks a free port
  int64_t grpc_port = 50051;  // 0 picks a free port; -1 disables gRPC
  int64_t http_threads = 2;
  int64_t max_body_bytes = 1 << 20;
  int64_t max_header_bytes = 16 << 10;   // request line plus headers; beyond: 431
  int64_t max_connections = 256;         // open HTTP connections; beyond: 503 and close
  int64_t request_timeout_ms = 60000;    // to receive a whole request, idle wait included
  int64_t write_timeout_ms = 30000;      // a client that reads nothing this long is dropped
  int64_t max_buffered_bytes = 4 << 20;  // undelivered stream output per connection
  std::string api_key;                   // required from clients when set; must be set off loopback
  std::string api_key_file;              // keys one per line (several valid at once: rotation)
  // Remote control (the admin API). Off unless an admin key is configured.
  std::string admin_key;
  std::string admin_key_file;
  int64_t admin_loopback_open = 0;  // 1: admin (and host) calls from loopback need no key
  // The host app's memory reports (gRPC ReportMemoryPressure): a host key or an admin key.
  std::string host_key;
  std::string host_key_file;
  // Balancers (CIDR list) whose PROXY v2 header / X-Forwarded-For names the real client.
  std::string trusted_proxy;
  int64_t metrics_open = 0;         // 1: GET /metrics needs no API key
  int64_t auth_failure_limit = 10;  // failed key checks per address per minute (0: no limit)
  std::string audit_log;            // "" -> the main log; or a file of JSON lines
  // TLS for both frontends (PEM files). Off loopback the server refuses to start without it
  // unless allow_insecure is 1.
  std::string tls_cert;
  std::string tls_key;
  int64_t allow_insecure = 0;
  // Model.
  std::string model = "../shared/models/stories260K.gguf";
  std::string model_dir;  // .gguf files the admin API may reload; "" -> reload is off
  std::string model_id;   // "" -> the model file name without .gguf
  // The projector GGUF of `model` (llama.cpp's --mmproj: clip.* keys, vision tower, projector);
  // "" -> the model takes no images.
  std::string mmproj;
  // Models on demand: every .gguf here is listed and served by its file stem, loaded when a
  // request names it (in place of the one loaded); "" -> only `model` is served.
  std::string models_dir;
  int64_t sleep_idle_seconds = 0;        // unload the model after this long idle; 0: never
  int64_t model_switch_wait_ms = 30000;  // a request waits this long for a switch, then 503
  std::string chat_template;       // "" -> detect from the GGUF; or chatml, llama2, llama3, ...
  std::string chat_template_file;  // a Jinja template run instead of the GGUF's own
  // Thinking in chat answers: "deepseek" moves <think>...</think> to reasoning_content,
  // "none" leaves it inline (llama-server's names); a request's reasoning_format wins.
  std::string reasoning_format = "deepseek";
  // Embeddings: how a prompt's hidden states become one vector, none | mean | cls | last | rank
  // (llama.cpp's --pooling; rank is a reranker's, which /v1/rerank uses whatever this says);
  // "" -> the GGUF's pooling_type, else last (a decoder's last token).
  std::string pooling;
  // 1: requests may set forced_output (the answer is a given text; for tests only).
  int64_t allow_forced_output = 0;
  // Speculative decoding: none, draft (model_draft proposes), ngram (prompt lookup); a
  // request's `prediction` drafts whatever it is. Drafts of draft_max tokens at most, dropped
  // when shorter than draft_min; the draft model stops at a token it gives less than
  // draft_p_min (llama.cpp's defaults: 16, 0, 0.75).
  std::string spec_type;    // "" -> draft with model_draft, else none
  std::string model_draft;  // "" -> none
  int64_t draft_max = 16;
  int64_t draft_min = 0;
  std::string draft_p_min = "0.75";
  // The Responses API's stored responses (store: true, previous_response_id): at most this many,
  // this many MiB of their text, each kept this many seconds; the least recently used go first.
  int64_t response_store_entries = 1000;
  int64_t response_store_mb = 32;
  int64_t response_store_ttl_s = 3600;
  // Engine.
  int64_t threads = 0;  // compute threads; 0 -> all cores
  int64_t n_ctx = 0;    // 0 -> the model's training context
  int64_t kv_block_size = 16;
  int64_t kv_blocks = 0;  // 0 -> enough for max_running full contexts
  // The KV cache's element types, by llama.cpp's --cache-type-k/-v names (its default f16).
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  // The prompt cache on flash (engine/kv/prompt_cache_store.h): '' -> off.
  std::string prompt_cache_dir;
  int64_t prompt_cache_mb = 1024;
  // 1: sequences outgrowing n_ctx drop the middle of their context (llama.cpp's context shift).
  int64_t context_shift = 0;
  int64_t max_running = 16;
  int64_t max_queue = 64;
  int64_t step_token_budget = 128;
  // Prompt chunks sized so that a step decoding streams stays near this (0: off). 40 ms kept
  // p99 time between tokens at 65 ms for 8 and 16 clients (bench/RESULTS.md, session 7).
  int64_t step_time_target_ms = 40;
  // Sparse FFN: a share of neurons skipped per decoded token (needs `profile`, from `sparrow
  // profile`); PowerInfer files are sparse by their own predictors.
  std::string sparsity = "0";
  std::string profile;
  std::string sparsity_method = "cats";  // cats | teal-down
  // A converted file's FFN stays on flash with this many MiB of neurons in memory (-1: the whole
  // file is mapped); cache_hot_percent of them are each layer's hottest, preloaded.
  int64_t cache_mb = -1;
  int64_t cache_hot_percent = 50;
  // With cache_mb: flash reads in flight at once (io_uring); 1: one pread at a time.
  int64_t io_depth = 128;
  // With cache_mb: shrink the neuron cache when the device wants memory back (PSI, the cgroup's
  // pressure events and headroom, MemAvailable), the operator or the host app says so, and grow
  // it back when it is quiet (1); the same without watching the device (2: admin API and
  // ReportMemoryPressure only); or keep it fixed (0).
  int64_t memory_pressure = 1;
  // The hardware profile (`sparrow profile-hw`) the planner works from; "": the default cache
  // path when it exists; "none": no planning (the budget's fixed split).
  std::string hw_profile;
  // Collaborative inference (one model across devices on a LAN). A worker computes the layers
  // a coordinator assigns it and serves nothing else (gRPC only, worker key required); a
  // coordinator lists its workers, each holding the same model file.
  int64_t worker = 0;
  std::string workers;  // "host:port,host:port"
  // Keys of the shard link, as admin_key_file: the coordinator sends the first, a worker
  // accepts any. Never the admin key: a worker's key opens a worker, nothing else.
  std::string worker_key_file;
  // The certificate the other end of the shard link must present (a worker pins its
  // coordinator's, a coordinator checks its workers'); "": this device's tls_cert.
  std::string shard_peer_cert;
  std::string shard_layers;  // "" -> placed by measured speed; or counts, coordinator first
  std::string shard_encoding = "f32";       // f32 | f16 | q8_0: the hidden state on the wire
  int64_t worker_timeout_ms = 10000;        // a step a worker has not answered by then fails
  std::string shard_objective = "latency";  // latency | throughput: what the placement optimises
  std::string shard_split = "layers";       // layers (pipeline) | tensor (sliced) | auto
  int64_t shard_micro_batches = 0;  // parts a batch is cut into for the pipeline; 0: one per device
  // Operations.
  std::string log_format = "text";  // text | json
  std::string log_level = "info";   // trace | debug | info | warn | error
  int64_t shutdown_timeout_ms = 10000;
  std::string config_file;  // where the file layer came from ("" -> none)
};

}  // namespace sparrow
