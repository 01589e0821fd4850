#include "server/core/served_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/kv/kv_block_pool.h"
#include "engine/memory/context_fit.h"
#include "engine/memory/device_memory.h"
#include "server/core/memory_planning.h"

namespace sparrow::server {

std::string ModelIdFromPath(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name;
}

Result<std::shared_ptr<const SparsePlan>> MakeSparsePlanFromConfig(const ServerConfig& config,
                                                                   const Model& model,
                                                                   kernels::ThreadPool* pool) {
  SparsityOptions o;
  const std::string& s = config.sparsity;
  char* end = nullptr;
  o.sparsity = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(o.sparsity >= 0 && o.sparsity < 1)) {
    return InvalidArgument("config: 'sparsity' must be a number in [0, 1), got '" + s + "'");
  }
  if (config.sparsity_method == "cats") {
    o.method = ThresholdMethod::kCats;
  } else if (config.sparsity_method == "teal-down") {
    o.method = ThresholdMethod::kTealDown;
  } else if (config.sparsity_method == "predictor") {
    o.method = ThresholdMethod::kPredictor;
  } else {
    return InvalidArgument("config: 'sparsity_method' must be cats, teal-down or predictor, got '" +
                           config.sparsity_method + "'");
  }
  o.profile_path = config.profile;
  if (config.cache_mb >= 0) o.cache_bytes = static_cast<size_t>(config.cache_mb) << 20;
  o.store.hot_share = static_cast<double>(config.cache_hot_percent) / 100.0;
  o.store.queue_depth = static_cast<int>(config.io_depth);
  auto plan = MakeSparsePlan(model, o, pool);
  if (!plan.ok()) return plan.status().WithContext("config: sparsity");
  return plan;
}

Result<std::shared_ptr<ServedModel>> LoadServedModel(const ServerConfig& config,
                                                     const std::string& path,
                                                     const std::string& model_id,
                                                     const ConnectWorkersFn& connect) {
  auto m = std::make_shared<ServedModel>();
  m->path = path;
  SPARROW_ASSIGN_OR_RETURN(m->model, Model::Load(path));
  SPARROW_ASSIGN_OR_RETURN(m->tokenizer, LoadTokenizer(m->model->file()));
  m->model_id = model_id.empty() ? ModelIdFromPath(path) : model_id;

  if (!config.chat_template.empty()) {
    m->chat_template = config.chat_template;
  } else if (!config.chat_template_file.empty()) {
    std::ifstream in(config.chat_template_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) {
      return InvalidArgument("config: 'chat_template_file' '" + config.chat_template_file +
                             "' cannot be read or is empty");
    }
    m->chat_template = text.str();
  } else {
    auto jinja = m->model->file().GetString("tokenizer.chat_template");
    if (jinja.ok()) m->chat_template = std::string(*jinja);
  }

  const Tokenizer& vocab = *m->tokenizer;
  const auto token_text = [&vocab](TokenId id) {
    return id == kNoToken ? std::string() : std::string(vocab.token_text(id));
  };
  m->chat = std::make_shared<const ChatRenderer>(m->chat_template, token_text(vocab.bos()),
                                                 token_text(vocab.special(SpecialToken::kEos)),
                                                 vocab.add_bos());
  if (!ReasoningFormatFromName(config.reasoning_format, &m->reasoning_format)) {
    return InvalidArgument("config: 'reasoning_format' is '" + config.reasoning_format +
                           "'; expected deepseek, auto or none");
  }
  m->allow_forced_output = config.allow_forced_output != 0;

  // What the process holds before any pool: its runtime, the vocabulary, the chat template.
  const uint64_t baseline_bytes = ProcessAnonBytes();
  const int64_t n_ctx_train = m->model->config().n_ctx_train;
  if (config.n_ctx > 0 && n_ctx_train > 0 && config.n_ctx > n_ctx_train) {
    return InvalidArgument("config: 'n_ctx' is " + std::to_string(config.n_ctx) +
                           " but the model '" + path + "' was trained for " +
                           std::to_string(n_ctx_train) + " positions");
  }

  const int threads = config.threads > 0
                          ? static_cast<int>(config.threads)
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  m->pool = std::make_unique<kernels::ThreadPool>(threads);

  SchedulerOptions opts;
  opts.kv_block_size = config.kv_block_size;
  opts.kv_blocks = config.kv_blocks;
  opts.max_running = config.max_running;
  opts.max_queue = config.max_queue;
  opts.step_token_budget = config.step_token_budget;
  opts.step_time_target_ms = static_cast<double>(config.step_time_target_ms);
  const Tokenizer* tok = m->tokenizer.get();
  opts.is_eog = [tok](int32_t id) { return tok->IsEog(id); };
  SPARROW_ASSIGN_OR_RETURN(m->sparse_plan,
                           MakeSparsePlanFromConfig(config, *m->model, m->pool.get()));
  opts.make_ffn = [plan = m->sparse_plan](const Model& model, kernels::ThreadPool* pool) {
    return MakeFeedForward(model, plan, pool);
  };
  if (m->sparse_plan) {
    opts.neuron_store = m->sparse_plan->store;
    opts.sparsity_level = m->sparse_plan->levels;
  }
  const Model& model = *m->model;
  // What the process holds whatever the context: the FFN's rows on flash are read through the
  // neuron cache, the rest of the file is mapped and read.
  const uint64_t ffn_on_flash = opts.neuron_store ? model.weights().bundles->bundle_bytes() : 0;
  uint64_t weights_bytes =
      model.file().file_size() - std::min(ffn_on_flash, model.file().file_size());
  if (m->sparse_plan) weights_bytes += m->sparse_plan->owned_bytes();
  const uint64_t cache_bytes = opts.neuron_store ? opts.neuron_store->stats().capacity_bytes : 0;
  const uint64_t offer = DeviceMemoryOffer();
  if (config.n_ctx > 0) {
    m->n_ctx = config.n_ctx;
  } else {
    ContextFitInput fit;
    fit.n_ctx_train = n_ctx_train;
    fit.offer_bytes = offer;
    fit.fixed_bytes = baseline_bytes + weights_bytes + cache_bytes +
                      EstimateScratchBytes(model.config(), config.step_token_budget, fit.granule);
    fit.kv_bytes_per_token = static_cast<uint64_t>(
        KvBlockPool::BlockBytes(model.config().n_layer, model.config().kv_dim(), 1));
    const ContextFit fitted = FitContext(fit);
    m->n_ctx = fitted.n_ctx;
    if (!fitted.why.empty()) {
      spdlog::info("model '{}': n_ctx {} to fit the device ({}; --n-ctx sets it)", m->model_id,
                   m->n_ctx, fitted.why);
    }
  }
  opts.n_ctx = m->n_ctx;
  if (!config.workers.empty()) {
    if (!connect) {
      return Unsupported("config: 'workers' needs gRPC, and this sparrowd was built without it");
    }
    SPARROW_ASSIGN_OR_RETURN(ConnectedWorkers w, connect(config, *m->model, m->pool.get()));
    opts.remote_layers = w.ranges;
    opts.pipeline_micro_batches = config.shard_micro_batches;
    m->workers = std::make_shared<const ConnectedWorkers>(std::move(w));
  }
  m->scheduler = std::make_unique<Scheduler>(*m->model, m->pool.get(), opts);
  if (m->workers) {
    m->workers->topology->Start([scheduler = m->scheduler.get()](auto ranges) {
      scheduler->ReplaceRemoteLayers(std::move(ranges));
    });
  }
  if (config.memory_pressure != 0) {
    // Under pressure the KV pool shrinks to one full context and the neuron cache to nothing
    // (every neuron then comes from flash: slower, never stuck); both grow back to what the
    // config asked for.
    MemoryConsumers c;
    c.baseline_bytes = baseline_bytes;
    c.weights_bytes = weights_bytes;
    c.scratch_bytes = EstimateScratchBytes(model.config(), opts.step_token_budget, m->n_ctx);
    const auto block = static_cast<uint64_t>(m->scheduler->kv_block_bytes());
    c.kv_min_bytes = block * static_cast<uint64_t>(m->scheduler->min_kv_blocks());
    c.kv_max_bytes = block * static_cast<uint64_t>(m->scheduler->options().kv_blocks);
    c.cache_max_bytes = cache_bytes;
    SPARROW_ASSIGN_OR_RETURN(PlanFn planner, MakePlanFn(config, *m, c));
    const MemoryBudget budget(c);
    // The first budget is what the device offers now, and no budget is more than its limit:
    // the rest comes when the sources see room for it.
    BudgetPolicyOptions policy;
    if (offer > 0) policy.start_bytes = std::max<uint64_t>(1, budget.ElasticFor(offer));
    if (const uint64_t limit = DeviceMemoryLimit(); limit > 0) {
      policy.ceiling_bytes = std::max<uint64_t>(1, budget.ElasticFor(limit));
    }
    m->memory = std::make_unique<MemoryGovernor>(
        m->scheduler.get(),
        config.memory_pressure == 1 ? DetectPressureSources()
                                    : std::vector<std::unique_ptr<PressureSource>>{},
        budget, policy, 100, std::move(planner), [] { return ProcessResidentBytes(); });
  }
  return m;
}

}  // namespace sparrow::server
