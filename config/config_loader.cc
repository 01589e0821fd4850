#include "config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "config/version.h"
#include "engine/common/tensor_type.h"
#include "engine/model/pooling_type.h"

namespace sparrow {
namespace {

// One configuration key: its YAML name, where it lives in ServerConfig and its allowed range.
struct KeySpec {
  const char* key;
  const char* help;
  std::string ServerConfig::*str = nullptr;
  int64_t ServerConfig::*num = nullptr;
  int64_t min = 0;
  int64_t max = 0;
  bool flag = false;  // on the command line a bare switch (--allow-insecure) meaning 1
};

const std::vector<KeySpec>& Keys() {
  static const std::vector<KeySpec> keys = {
      {"host", "Address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface)",
       &ServerConfig::host},
      {"port", "HTTP port for the OpenAI-compatible API (0: pick a free one)", nullptr,
       &ServerConfig::port, 0, 65535},
      {"grpc_port", "gRPC port (0: pick a free one, -1: no gRPC)", nullptr,
       &ServerConfig::grpc_port, -1, 65535},
      {"http_threads", "Threads serving HTTP connections", nullptr, &ServerConfig::http_threads, 1,
       256},
      {"max_body_bytes", "Largest accepted HTTP request body, in bytes", nullptr,
       &ServerConfig::max_body_bytes, 1024, int64_t{1} << 30},
      {"max_header_bytes", "Largest accepted request line plus headers, in bytes (beyond: 431)",
       nullptr, &ServerConfig::max_header_bytes, 1024, 1 << 20},
      {"max_connections", "Open HTTP connections; more get 503 and are closed", nullptr,
       &ServerConfig::max_connections, 1, 1 << 20},
      {"request_timeout_ms",
       "Time to receive a whole request, the keep-alive wait included (then 408 and close)",
       nullptr, &ServerConfig::request_timeout_ms, 100, 3600 * 1000},
      {"write_timeout_ms", "A client that reads nothing for this long is dropped, in ms", nullptr,
       &ServerConfig::write_timeout_ms, 100, 3600 * 1000},
      {"max_buffered_bytes",
       "Stream output waiting for a slow client, per connection; beyond it the request is "
       "cancelled",
       nullptr, &ServerConfig::max_buffered_bytes, 4096, int64_t{1} << 32},
      {"api_key",
       "Secret clients must send as 'Authorization: Bearer <key>' (required off loopback)",
       &ServerConfig::api_key},
      {"api_key_file",
       "File of API keys, one per line as 'KEY' or 'ID KEY' (keeps keys out of ps; several are "
       "valid at once; reread when it changes)",
       &ServerConfig::api_key_file},
      {"admin_key",
       "Key for the admin API (/admin/v1/, sparrow.admin.v1.Admin); at least 16 characters. "
       "Without an admin key the admin API is off",
       &ServerConfig::admin_key},
      {"admin_key_file", "File of admin keys, same format as api_key_file",
       &ServerConfig::admin_key_file},
      {"admin_loopback_open",
       "1: admin calls (and the host app's memory reports) from this machine (loopback) need no "
       "key",
       nullptr, &ServerConfig::admin_loopback_open, 0, 1},
      {"host_key",
       "Key of the host app's memory reports (gRPC ReportMemoryPressure); at least 16 "
       "characters. An admin key is accepted too; an inference key never",
       &ServerConfig::host_key},
      {"host_key_file", "File of host keys, same format as api_key_file",
       &ServerConfig::host_key_file},
      {"trusted_proxy",
       "Balancers whose word on the client's address is believed: a comma-separated list of CIDR "
       "ranges or addresses. From them a PROXY protocol v2 header (HAProxy's send-proxy-v2) or "
       "X-Forwarded-For names the client the failure lockout counts; from others neither is "
       "accepted",
       &ServerConfig::trusted_proxy},
      {"metrics_open",
       "1: GET /metrics needs no API key (for a Prometheus scraper or a cluster's endpoint picker "
       "that sends none; the counts show load, not text)",
       nullptr, &ServerConfig::metrics_open, 0, 1},
      {"auth_failure_limit",
       "Failed key checks per client address per minute before it is refused for a while "
       "(0: no limit)",
       nullptr, &ServerConfig::auth_failure_limit, 0, 1 << 20},
      {"tls_cert",
       "PEM certificate chain: HTTPS and gRPC over TLS, with tls_key (`sparrowctl cert` or "
       "deploy/make-cert.sh makes a self-signed pair)",
       &ServerConfig::tls_cert},
      {"tls_key", "PEM private key of tls_cert", &ServerConfig::tls_key},
      {"allow_insecure",
       "Serve without TLS on a non-loopback host: keys and text cross the network in clear",
       nullptr, &ServerConfig::allow_insecure, 0, 1, true},
      {"audit_log",
       "Where admin actions are recorded: a file (JSON lines, appended) or '' for the main log",
       &ServerConfig::audit_log},
      {"model", "Path of the GGUF model file to serve", &ServerConfig::model},
      {"mmproj",
       "The model's projector GGUF, as llama.cpp's --mmproj (convert_hf_to_gguf.py --mmproj "
       "writes it: the vision encoder and its projector); only for 'model', not the others of "
       "models_dir ('': the model takes no images)",
       &ServerConfig::mmproj},
      {"model_dir",
       "Directory of .gguf files the admin API may switch to (POST /admin/v1/reload); '': off",
       &ServerConfig::model_dir},
      {"model_id", "Model name clients use in requests (default: file name without .gguf)",
       &ServerConfig::model_id},
      {"models_dir",
       "Serve every .gguf file of this directory on demand: each is listed in /v1/models by its "
       "file name without .gguf (\"stories260K.gguf\" is \"stories260K\"), and a request naming "
       "one that is not loaded loads it in place of the loaded one once the old one's requests "
       "finish. The first model is 'model' when the directory has a file of that name, else the "
       "directory's first by name; model_id is not used. Admin reload switches among them too",
       &ServerConfig::models_dir},
      {"sleep_idle_seconds",
       "Unload the model after this many seconds without requests, giving its memory back "
       "(weights, "
       "KV pool, caches); the next request loads it again (0: never)",
       nullptr, &ServerConfig::sleep_idle_seconds, 0, 7 * 24 * 3600},
      {"model_switch_wait_ms",
       "How long a request waits for another model to be loaded (models_dir) or the sleeping one "
       "to wake; past it the request gets 503 with Retry-After and the switch goes on",
       nullptr, &ServerConfig::model_switch_wait_ms, 0, 3600 * 1000},
      {"chat_template",
       "Chat template: chatml, llama2, llama3, phi3, gemma, mistral, zephyr (default: detect)",
       &ServerConfig::chat_template},
      {"chat_template_file",
       "A Jinja chat template file run instead of the GGUF's own (as llama-server's "
       "--chat-template-file); chat_template, a family name, wins over it",
       &ServerConfig::chat_template_file},
      {"reasoning_format",
       "Thinking (<think>...</think>) in chat answers: deepseek (to reasoning_content) or none "
       "(inline in content); a request's reasoning_format overrides it",
       &ServerConfig::reasoning_format},
      {"pooling",
       "Embeddings (/v1/embeddings, gRPC Embed): mean, cls or last pooling of the prompt's final "
       "hidden states (none: per token, which those APIs refuse; rank: a reranker's scores, "
       "which they refuse too, /v1/rerank ranks whatever this says); '': the GGUF's "
       "pooling_type, else last",
       &ServerConfig::pooling},
      {"allow_forced_output",
       "1: a request's forced_output makes the model answer with that text (tests of tool-call "
       "and reasoning parsing; never on a production server)",
       nullptr, &ServerConfig::allow_forced_output, 0, 1, true},
      {"spec_type",
       "Speculative decoding: none, draft (model_draft proposes) or ngram (prompt lookup); a "
       "request's prediction drafts whatever it is (default: draft with model_draft, else none)",
       &ServerConfig::spec_type},
      {"model_draft", "A draft model of the same vocabulary for speculative decoding ('': none)",
       &ServerConfig::model_draft},
      {"draft_max", "Draft tokens verified per step at most", nullptr, &ServerConfig::draft_max, 1,
       256},
      {"draft_min", "Drafts shorter than this are not verified", nullptr, &ServerConfig::draft_min,
       0, 256},
      {"draft_p_min",
       "The draft model stops drafting at a token it gives less probability than this (0 to 1)",
       &ServerConfig::draft_p_min},
      {"response_store_entries",
       "Responses the Responses API keeps for previous_response_id and GET /v1/responses/{id} "
       "(0: none kept); the least recently used go first",
       nullptr, &ServerConfig::response_store_entries, 0, 1 << 20},
      {"response_store_mb", "MiB of text (responses and their conversations) those may hold",
       nullptr, &ServerConfig::response_store_mb, 1, 1 << 20},
      {"response_store_ttl_s", "Seconds a stored response is kept", nullptr,
       &ServerConfig::response_store_ttl_s, 1, int64_t{366} * 24 * 3600},
      {"threads", "Compute threads (0: all cores)", nullptr, &ServerConfig::threads, 0, 1024},
      {"n_ctx",
       "Context length per request, prompt plus output (0: the model's own when one request of it "
       "takes at most half of the memory the device offers beside the weights, else the longest "
       "that does)",
       nullptr, &ServerConfig::n_ctx, 0, int64_t{1} << 24},
      {"kv_block_size", "Token positions per KV cache block", nullptr, &ServerConfig::kv_block_size,
       1, 4096},
      {"kv_blocks", "KV cache blocks in the pool (0: enough for max_running full contexts)",
       nullptr, &ServerConfig::kv_blocks, 0, int64_t{1} << 24},
      {"cache_type_k",
       "Element type of the KV cache's keys, as llama.cpp's --cache-type-k: f32, f16, bf16, q8_0, "
       "q4_0, q4_1, q5_0 or q5_1 (the quantized ones need a head size that is a multiple of 32)",
       &ServerConfig::cache_type_k},
      {"cache_type_v", "Element type of the KV cache's values, as llama.cpp's --cache-type-v",
       &ServerConfig::cache_type_v},
      {"prompt_cache_dir",
       "Directory where full prefix blocks of the KV cache are kept on flash, so that a restarted "
       "sparrowd reads a prompt it saw before instead of computing it ('': off)",
       &ServerConfig::prompt_cache_dir},
      {"prompt_cache_mb",
       "MiB the prompt cache's files may take on flash, every model's together (least recently "
       "used go first)",
       nullptr, &ServerConfig::prompt_cache_mb, 1, int64_t{1} << 24},
      {"context_shift",
       "1: a chat longer than the context keeps its system prompt and drops the oldest half of "
       "the rest, then goes on (llama.cpp's --context-shift); 0: it ends at the context",
       nullptr, &ServerConfig::context_shift, 0, 1, true},
      {"max_running", "Requests generating at once", nullptr, &ServerConfig::max_running, 1, 4096},
      {"max_queue", "Waiting requests before new ones get HTTP 429", nullptr,
       &ServerConfig::max_queue, 0, 1 << 20},
      {"step_token_budget", "Tokens (decode plus prefill chunk) per forward pass", nullptr,
       &ServerConfig::step_token_budget, 1, 1 << 20},
      {"step_time_target_ms",
       "Keep steps that decode streams near this many ms by sizing prompt chunks (0: off)", nullptr,
       &ServerConfig::step_time_target_ms, 0, 60000},
      {"sparsity",
       "Share of FFN neurons skipped per decoded token, 0 to 0.95 (0: dense; needs 'profile')",
       &ServerConfig::sparsity},
      {"profile", "Activation profile of the model (sparrow profile), for 'sparsity'",
       &ServerConfig::profile},
      {"sparsity_method",
       "cats (skip up/down rows by |silu(gate)|), teal-down (down rows by |h|) or predictor",
       &ServerConfig::sparsity_method},
      {"cache_mb",
       "On a file converted by `sparrow convert`: keep the FFN on flash and this many MiB of "
       "neurons in memory (-1: map the whole file)",
       nullptr, &ServerConfig::cache_mb, -1, int64_t{1} << 30},
      {"cache_hot_percent",
       "Share of cache_mb preloaded with each layer's hottest neurons (the rest: an LRU cache)",
       nullptr, &ServerConfig::cache_hot_percent, 0, 100},
      {"io_depth",
       "With cache_mb: flash reads in flight at once (io_uring; 1: one read at a time; `sparrow "
       "bench --io-depth` measures the device)",
       nullptr, &ServerConfig::io_depth, 1, 4096},
      {"memory_pressure",
       "Size the KV pool and the neuron cache (with cache_mb) by the device's memory pressure, the "
       "operator and the host app (1), by the operator and the host app only (2), or keep them "
       "fixed (0)",
       nullptr, &ServerConfig::memory_pressure, 0, 2},
      {"hw_profile",
       "Hardware profile from `sparrow profile-hw`: every memory budget is planned with it "
       "(threads, neuron cache, KV pool); empty: ~/.cache/sparrow/hw.yaml when present; none: off",
       &ServerConfig::hw_profile},
      {"worker",
       "Run as a worker of collaborative inference: compute the layers a coordinator sparrowd "
       "assigns over gRPC (grpc_port), nothing else; needs worker_key_file, and TLS off loopback",
       nullptr, &ServerConfig::worker, 0, 1, true},
      {"workers",
       "Worker sparrowds that compute part of the model's layers, as host:port,host:port (their "
       "gRPC ports); each holds the same model file. Needs worker_key_file, and TLS (tls_cert) "
       "for any worker not on loopback",
       &ServerConfig::workers},
      {"worker_key_file",
       "File of shard-link keys (as admin_key_file): a coordinator sends the first to its "
       "workers, a worker accepts any; the admin key is never sent",
       &ServerConfig::worker_key_file},
      {"shard_peer_cert",
       "PEM certificate the other end of the shard link must present over mutual TLS (a worker: "
       "its coordinator's; a coordinator: its workers'); empty: this device's tls_cert",
       &ServerConfig::shard_peer_cert},
      {"shard_layers",
       "With workers: layers per device, this one first then each worker in order (\"4,10,10\"); "
       "empty: placed by each device's measured speed and link (EdgeShard's dynamic program)",
       &ServerConfig::shard_layers},
      {"shard_encoding",
       "With workers: hidden states on the wire as f32 (exact), f16 (half the bytes) or q8_0 "
       "(int8 blocks, 27% of the bytes, for the slowest links); auto: f32 on links of a gigabit "
       "or more, q8_0 below, chosen per link from its measured bandwidth",
       &ServerConfig::shard_encoding},
      {"shard_objective",
       "With workers and no shard_layers: place layers for the lowest per-token latency "
       "(latency) or for the most tokens per second when requests fill the pipeline (throughput)",
       &ServerConfig::shard_objective},
      {"shard_split",
       "With workers: how the model is cut: layers (each device computes a run of whole layers, "
       "EdgeShard's pipeline) or tensor (every device computes a slice of every layer: its "
       "share of the attention heads and FFN neurons, Galaxy's tensor split; lower latency "
       "when the devices' compute outweighs two round trips per layer) or auto (the one the "
       "planners predict faster per token, from the measured devices and links)",
       &ServerConfig::shard_split},
      {"shard_micro_batches",
       "With workers: the devices work as a pipeline, one batch in flight per device; a batch "
       "alone in it (one long prompt) is cut into this many parts; 0: one per device; 1: no "
       "pipeline (one batch at a time goes from device to device)",
       nullptr, &ServerConfig::shard_micro_batches, 0, 64},
      {"worker_timeout_ms",
       "With workers: a step a worker has not answered within this fails; when a worker leaves, "
       "requests wait this long for the layers to be placed again",
       nullptr, &ServerConfig::worker_timeout_ms, 100, 3600 * 1000},
      {"log_format", "Log line format: text or json", &ServerConfig::log_format},
      {"log_level", "Log level: trace, debug, info, warn, error", &ServerConfig::log_level},
      {"shutdown_timeout_ms", "How long running requests may finish after SIGTERM, in ms", nullptr,
       &ServerConfig::shutdown_timeout_ms, 0, 3600 * 1000},
  };
  return keys;
}

std::string EnvName(std::string_view key) {
  std::string out = "SPARROW_";
  for (char c : key) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string FlagName(std::string_view key) {
  std::string out = "--";
  for (char c : key) out += c == '_' ? '-' : c;
  return out;
}

Status SetKey(const KeySpec& k, const std::string& value, const std::string& origin,
              ServerConfig* c) {
  if (k.str) {
    c->*k.str = value;
    return Status::Ok();
  }
  int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || v < k.min || v > k.max) {
    return InvalidArgument("config: '" + std::string(k.key) + "' must be an integer between " +
                           std::to_string(k.min) + " and " + std::to_string(k.max) + ", got '" +
                           value + "' (from " + origin + ")");
  }
  c->*k.num = v;
  return Status::Ok();
}

const KeySpec* FindKey(std::string_view key) {
  for (const auto& k : Keys()) {
    if (key == k.key) return &k;
  }
  return nullptr;
}

constexpr const char* kDescription =
    "sparrowd: serves one GGUF language model over an OpenAI-compatible HTTP API\n"
    "(POST /v1/chat/completions, POST /v1/completions, POST /v1/responses, GET /v1/models,\n"
    "GET /health, GET /metrics) and gRPC.\n"
    "\n"
    "Quick start (from the repository root):\n"
    "  sparrowd --model ../shared/models/stories260K.gguf --port 8080\n"
    "  curl http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' \\\n"
    "       -d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 32}'\n"
    "\n"
    "Remote control: with --admin-key-file, the admin API (/admin/v1/, gRPC\n"
    "sparrow.admin.v1.Admin, `sparrowctl`) and the dashboard at /dashboard/. Off this\n"
    "machine, serve with TLS: `sparrowctl cert --out DIR`, then --tls-cert/--tls-key.\n"
    "\n"
    "Every setting below can come from four places; the first one found wins:\n"
    "  1. a flag           --max-running 8\n"
    "  2. the environment  SPARROW_MAX_RUNNING=8\n"
    "  3. a YAML file      max_running: 8     (given with --config or SPARROW_CONFIG;\n"
    "                                          config/sparrow.yaml documents every key)\n"
    "  4. the built-in default shown in brackets.\n"
    "A bad value stops the server with exit code 2 and a message naming the key.\n"
    "Stop it with Ctrl-C or SIGTERM: it stops accepting, lets running requests finish\n"
    "(up to shutdown_timeout_ms) and exits 0.\n";

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Status ApplyYamlConfig(const std::string& yaml_text, const std::string& origin,
                       ServerConfig* config) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("config: " + origin + ": not valid YAML: " + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return InvalidArgument("config: " + origin + ": must be a mapping of keys");
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>("");
    const KeySpec* k = FindKey(key);
    if (!k) return InvalidArgument("config: " + origin + ": unknown key '" + key + "'");
    if (entry.second.IsNull()) continue;  // "key:" with no value keeps the default
    if (!entry.second.IsScalar()) {
      return InvalidArgument("config: '" + key + "' in " + origin + " must be a single value");
    }
    SPARROW_RETURN_IF_ERROR(SetKey(*k, entry.second.Scalar(), origin, config));
  }
  return Status::Ok();
}

Status ValidateServerConfig(const ServerConfig& c) {
  if (c.log_format != "text" && c.log_format != "json") {
    return InvalidArgument("config: 'log_format' must be text or json, got '" + c.log_format + "'");
  }
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
  if (std::find(std::begin(kLevels), std::end(kLevels), c.log_level) == std::end(kLevels)) {
    return InvalidArgument("config: 'log_level' must be trace, debug, info, warn or error, got '" +
                           c.log_level + "'");
  }
  if (c.host.empty()) return InvalidArgument("config: 'host' must not be empty");
  if (c.model.empty()) return InvalidArgument("config: 'model' must name a GGUF file");
  // A worker serves no API, only its coordinator, which must send a worker key.
  if (c.worker != 0 && c.worker_key_file.empty()) {
    return InvalidArgument(
        "config: a worker needs a worker key (worker_key_file): it computes only for a "
        "coordinator that sends one");
  }
  if (!c.workers.empty() && c.worker_key_file.empty()) {
    return InvalidArgument(
        "config: 'workers' needs a worker key (worker_key_file): workers accept only a "
        "coordinator that sends one of theirs (the admin key is never sent)");
  }
  if (c.shard_objective != "latency" && c.shard_objective != "throughput") {
    return InvalidArgument("config: 'shard_objective' must be latency or throughput, got '" +
                           c.shard_objective + "'");
  }
  for (const auto& [key, value] :
       {std::pair{"cache_type_k", &c.cache_type_k}, std::pair{"cache_type_v", &c.cache_type_v}}) {
    if (!KvCacheTypeFromName(*value)) {
      return InvalidArgument(std::string("config: '") + key + "' must be one of " +
                             std::string(KvCacheTypeNames()) + ", got '" + *value + "'");
    }
  }
  if (!c.spec_type.empty() && c.spec_type != "none" && c.spec_type != "draft" &&
      c.spec_type != "ngram") {
    return InvalidArgument("config: 'spec_type' must be none, draft or ngram, got '" + c.spec_type +
                           "'");
  }
  if (c.spec_type == "draft" && c.model_draft.empty()) {
    return InvalidArgument("config: 'spec_type' draft needs a draft model (model_draft)");
  }
  if (c.draft_min > c.draft_max) {
    return InvalidArgument("config: 'draft_min' (" + std::to_string(c.draft_min) +
                           ") is more than 'draft_max' (" + std::to_string(c.draft_max) + ")");
  }
  {
    char* end = nullptr;
    const double p = std::strtod(c.draft_p_min.c_str(), &end);
    if (c.draft_p_min.empty() || *end != '\0' || !(p >= 0 && p <= 1)) {
      return InvalidArgument("config: 'draft_p_min' must be a number from 0 to 1, got '" +
                             c.draft_p_min + "'");
    }
  }
  if (!c.pooling.empty() && !PoolingFromName(c.pooling)) {
    return InvalidArgument("config: 'pooling' must be one of " + std::string(kPoolingNames) +
                           ", got '" + c.pooling + "'");
  }
  if (c.shard_split != "layers" && c.shard_split != "tensor" && c.shard_split != "auto") {
    return InvalidArgument("config: 'shard_split' must be layers, tensor or auto, got '" +
                           c.shard_split + "'");
  }
  if (c.shard_split != "layers" && !c.shard_layers.empty()) {
    return InvalidArgument("config: 'shard_layers' places whole layers; with 'shard_split' " +
                           c.shard_split + " the planners choose (leave shard_layers empty)");
  }
  if (c.worker != 0 && !c.workers.empty()) {
    return InvalidArgument(
        "config: 'worker' and 'workers' exclude each other: a device is a "
        "worker or a coordinator");
  }
  if (c.worker == 0 && !IsLoopbackHost(c.host) && c.api_key.empty() && c.api_key_file.empty()) {
    return InvalidArgument("config: 'api_key' must be set when 'host' is '" + c.host +
                           "' (not loopback): anyone on the network could use the server");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return InvalidArgument("config: 'tls_cert' and 'tls_key' go together; set both or neither");
  }
  // The shard link carries the worker key and every hidden state: --allow-insecure does not
  // cover it.
  if (c.worker != 0 && !IsLoopbackHost(c.host) && c.tls_cert.empty()) {
    return InvalidArgument(
        "config: a worker on '" + c.host +
        "' (not loopback) needs TLS: its coordinator's key and the hidden states would cross the "
        "network in clear text. Set 'tls_cert' and 'tls_key' (--allow-insecure does not apply "
        "to the shard link)");
  }
  if (!IsLoopbackHost(c.host) && c.tls_cert.empty() && c.allow_insecure == 0) {
    return InvalidArgument(
        "config: 'host' is '" + c.host +
        "' (not loopback) and TLS is off: keys, prompts and answers would cross the network in "
        "clear text. Set 'tls_cert' and 'tls_key' (`sparrowctl cert` makes a self-signed pair), "
        "or pass --allow-insecure to accept that");
  }
  return Status::Ok();
}

Result<ConfigLoadResult> LoadServerConfig(const std::vector<std::string>& args,
                                          const EnvLookup& env) {
  ConfigLoadResult result;
  ServerConfig& c = result.config;

  CLI::App app(kDescription, "sparrowd");
  app.get_formatter()->column_width(36);
  std::string config_flag;
  app.add_option("--config", config_flag, "YAML file with settings (env SPARROW_CONFIG)");
  app.set_version_flag("--version", std::string("sparrowd ") + kSparrowVersion);
  std::vector<std::string> flag_values(Keys().size());
  std::vector<CLI::Option*> options;
  const ServerConfig defaults;
  for (size_t i = 0; i < Keys().size(); ++i) {
    const KeySpec& k = Keys()[i];
    const std::string def = k.str ? defaults.*k.str : std::to_string(defaults.*k.num);
    // const: CLI11's add_flag(name, T&) would take a mutable string as the flag's result.
    const std::string help = std::string(k.help) + " [" + (def.empty() ? "none" : def) + "]";
    if (k.flag) {
      options.push_back(app.add_flag(FlagName(k.key), help));
    } else {
      options.push_back(
          app.add_option(FlagName(k.key), flag_values[i], help)->type_name(k.str ? "TEXT" : "INT"));
    }
  }
  std::vector<std::string> argv_store = {"sparrowd"};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    result.exit_now = true;
    result.message = app.help();
    return result;
  } catch (const CLI::CallForVersion&) {
    result.exit_now = true;
    result.message = std::string("sparrowd ") + kSparrowVersion + "\n";
    return result;
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(std::string("command line: ") + e.what() + " (see --help)");
  }

  // File layer.
  std::string file = config_flag;
  if (file.empty()) {
    if (const char* v = env("SPARROW_CONFIG")) file = v;
  }
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) return InvalidArgument("config: cannot read config file '" + file + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    SPARROW_RETURN_IF_ERROR(ApplyYamlConfig(ss.str(), file, &c));
    c.config_file = file;
  }
  // Environment layer, then flags.
  for (const auto& k : Keys()) {
    const std::string name = EnvName(k.key);
    if (const char* v = env(name.c_str())) {
      SPARROW_RETURN_IF_ERROR(SetKey(k, v, "environment variable " + name, &c));
    }
  }
  for (size_t i = 0; i < Keys().size(); ++i) {
    if (options[i]->count() > 0) {
      const std::string value = Keys()[i].flag ? "1" : flag_values[i];
      SPARROW_RETURN_IF_ERROR(SetKey(Keys()[i], value, "flag " + FlagName(Keys()[i].key), &c));
    }
  }
  SPARROW_RETURN_IF_ERROR(ValidateServerConfig(c));
  return result;
}

}  // namespace sparrow
