#include "server/core/served_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/kv/kv_block_pool.h"
#include "engine/kv/prompt_cache_store.h"
#include "engine/memory/context_fit.h"
#include "engine/memory/device_memory.h"
#include "engine/model/model_digest.h"
#include "engine/plan/hardware_profile.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/spec/vocab_match.h"

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

namespace {

// The planner for `m` (its model, scheduler and pool must outlive the function), or a null PlanFn
// without a hardware profile: `hw_profile` names it ("none": never plan), else the default cache
// path is used when the file exists. Fails when a named profile, or the model's activation
// profile, cannot be read.
Result<PlanFn> PlannerFromConfig(const ServerConfig& config, const ServedModel& m,
                                 const MemoryConsumers& consumers) {
  if (config.hw_profile == "none") return PlanFn();
  std::string path = config.hw_profile;
  if (path.empty()) {
    path = plan::DefaultHardwareProfilePath();
    std::error_code ec;
    if (path.empty() || !std::filesystem::exists(path, ec)) {
      spdlog::info(
          "memory: no hardware profile{}{}; budgets split by a fixed rule (run `sparrow "
          "profile-hw` to have them planned)",
          path.empty() ? "" : " at ", path);
      return PlanFn();
    }
  }
  BudgetPlannerOptions o;
  SPARROW_ASSIGN_OR_RETURN(o.hardware, plan::ReadHardwareProfile(path));
  if (!config.profile.empty()) {
    auto p = ReadActivationProfile(config.profile, &m.model->config());
    if (!p.ok()) return p.status().WithContext("config: profile");
    o.profile = std::make_shared<const ActivationProfile>(std::move(p).value());
  }
  o.max_sparsity = std::strtod(config.sparsity.c_str(), nullptr);
  o.step_tokens = config.step_token_budget;
  o.io_depth = static_cast<int>(config.io_depth);
  o.max_threads = m.pool ? m.pool->size() : 1;
  spdlog::info("memory: budgets planned with the hardware profile {}", path);
  return MakeBudgetPlanner(std::move(o), *m.model, *m.scheduler, m.sparse_plan, consumers);
}

// Speculative decoding's settings; loads the draft model (into m.draft_model), whose vocabulary
// must be the served model's.
Result<SpecOptions> SpecFromConfig(const ServerConfig& config, ServedModel& m) {
  SpecOptions spec;
  const std::string type =
      config.spec_type.empty() ? (config.model_draft.empty() ? "none" : "draft") : config.spec_type;
  const std::optional<SpecType> t = SpecTypeFromName(type);
  if (!t)
    return InvalidArgument("config: 'spec_type' must be none, draft or ngram, got '" + type + "'");
  spec.type = *t;
  spec.draft_max = config.draft_max;
  spec.draft_min = config.draft_min;
  spec.draft_p_min = std::strtod(config.draft_p_min.c_str(), nullptr);
  if (spec.type != SpecType::kDraft) return spec;
  if (config.model_draft.empty()) {
    return InvalidArgument("config: 'spec_type' draft needs a draft model (model_draft)");
  }
  auto draft = Model::Load(config.model_draft);
  if (!draft.ok()) return draft.status().WithContext("config: 'model_draft'");
  m.draft_model = std::move(draft).value();
  auto draft_tok = LoadTokenizer(m.draft_model->file());
  if (!draft_tok.ok()) return draft_tok.status().WithContext("config: 'model_draft'");
  SPARROW_RETURN_IF_ERROR(CheckDraftVocab(*m.tokenizer, m.path, **draft_tok, config.model_draft));
  spec.draft_model = m.draft_model.get();
  spdlog::info("model '{}': speculative decoding with the draft model {} (up to {} tokens a step)",
               m.model_id, config.model_draft, spec.draft_max);
  return spec;
}

// The prompt cache on flash, for the pool `opts` describes (its blocks' model, types, shape).
Result<std::shared_ptr<KvBlockTier>> OpenPromptCache(const ServerConfig& config, const Model& model,
                                                     const SchedulerOptions& opts) {
  if (!config.workers.empty()) {
    spdlog::warn(
        "prompt cache: off with workers (the KV blocks here hold only this device's "
        "layers)");
    return std::shared_ptr<KvBlockTier>();
  }
  PromptCacheOptions o;
  o.dir = config.prompt_cache_dir;
  o.max_bytes = config.prompt_cache_mb << 20;
  o.io_depth = static_cast<int>(config.io_depth);
  o.identity.model_digest = ModelDigest(model.file());
  o.identity.types = opts.kv_types;
  o.identity.n_layer = model.config().n_layer;
  o.identity.kv_dim = model.config().kv_dim();
  o.identity.block_size = opts.kv_block_size;
  o.identity.block_bytes = KvBlockPool::BlockBytes(o.identity.n_layer, o.identity.kv_dim,
                                                   opts.kv_block_size, opts.kv_types);
  Result<std::unique_ptr<PromptCacheStore>> store = PromptCacheStore::Open(std::move(o));
  if (!store.ok())
    return InvalidArgument("config: 'prompt_cache_dir': " + store.status().message());
  const PromptCacheStats st = (*store)->stats();
  spdlog::info("prompt cache: {} ({} files, {} MiB under the directory; limit {} MiB)",
               (*store)->model_dir(), st.files, st.bytes >> 20, config.prompt_cache_mb);
  return std::shared_ptr<KvBlockTier>(std::move(*store));
}

// The config's mmproj, for the config's own model only (another model of models_dir has a
// width of its own): the projector's embeddings must be as wide as the model's.
Status LoadProjector(const ServerConfig& config, const std::string& path, ServedModel& m) {
  if (config.mmproj.empty() || path != config.model) return Status::Ok();
  auto clip = vision::ClipModel::Load(config.mmproj);
  if (!clip.ok()) return clip.status().WithContext("config: 'mmproj'");
  const int64_t width = (*clip)->hparams().n_text_embd;
  if (width != m.model->config().n_embd) {
    return InvalidArgument("config: 'mmproj' " + config.mmproj + " gives image embeddings of " +
                           std::to_string(width) + ", but model " + path + " takes " +
                           std::to_string(m.model->config().n_embd) +
                           ": it is the projector of another model");
  }
  m.vision = std::move(*clip);
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<ServedModel>> LoadServedModel(const ServerConfig& config,
                                                     const std::string& path,
                                                     const std::string& model_id,
                                                     const ConnectWorkersFn& connect,
                                                     const ServedModel* replacing) {
  auto m = std::make_shared<ServedModel>();
  m->path = path;
  SPARROW_ASSIGN_OR_RETURN(m->model, Model::Load(path));
  m->digest = ModelDigest(m->model->file());
  SPARROW_ASSIGN_OR_RETURN(m->tokenizer, LoadTokenizer(m->model->file()));
  m->grammars = std::make_unique<OutputGrammarCache>(*m->tokenizer);
  m->model_id = model_id.empty() ? ModelIdFromPath(path) : model_id;

  std::string chat_template;  // a template family name or Jinja text
  std::string origin = "the config's chat_template";
  if (!config.chat_template.empty()) {
    chat_template = config.chat_template;
  } else if (!config.chat_template_file.empty()) {
    origin = "chat_template_file '" + config.chat_template_file + "'";
    std::ifstream in(config.chat_template_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) {
      return InvalidArgument("config: 'chat_template_file' '" + config.chat_template_file +
                             "' cannot be read or is empty");
    }
    chat_template = text.str();
  } else {
    auto jinja = m->model->file().GetString("tokenizer.chat_template");
    if (jinja.ok()) chat_template = std::string(*jinja);
    origin = "tokenizer.chat_template of '" + path + "'";
  }

  m->chat = std::make_shared<const ChatFormat>(std::move(chat_template), *m->tokenizer,
                                               std::move(origin));
  if (!ReasoningFormatFromName(config.reasoning_format, &m->reasoning_format)) {
    return InvalidArgument("config: 'reasoning_format' is '" + config.reasoning_format +
                           "'; expected deepseek, auto or none");
  }
  m->allow_forced_output = config.allow_forced_output != 0;
  m->pooling = PoolingFromName(config.pooling)
                   .value_or(FilePooling(m->model->file()).value_or(PoolingType::kLast));
  m->rerank = RerankFormat::FromFile(m->model->file());
  SPARROW_RETURN_IF_ERROR(LoadProjector(config, path, *m));

  // What the process holds before any pool: its runtime and libraries, the vocabulary, the chat
  // template; the model's pages it has read so far are the weights' part.
  const uint64_t model_resident = MappingResidentBytes(m->model->file().base());
  const uint64_t resident = ProcessResidentBytes();
  const uint64_t baseline_bytes =
      replacing != nullptr
          ? replacing->baseline_bytes
          : (resident > model_resident ? resident - model_resident : ProcessAnonBytes());
  m->baseline_bytes = baseline_bytes;
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
  opts.kv_types = {KvCacheTypeFromName(config.cache_type_k).value_or(TensorType::kF16),
                   KvCacheTypeFromName(config.cache_type_v).value_or(TensorType::kF16)};
  if (Status st = CheckKvTypes(opts.kv_types, m->model->config().head_dim); !st.ok()) {
    return InvalidArgument("config: 'cache_type_k'/'cache_type_v': " + st.message());
  }
  // An encoder's keys and values last one pass over its input: F32, as llama.cpp computes them
  // (it keeps no cache for them), whatever the cache types say.
  if (!m->model->config().causal && opts.kv_types != KvTypes{TensorType::kF32, TensorType::kF32}) {
    spdlog::info("model '{}': an encoder's keys and values are kept in f32", m->model_id);
    opts.kv_types = {TensorType::kF32, TensorType::kF32};
  }
  opts.max_running = config.max_running;
  opts.context_shift = config.context_shift != 0;
  m->context_shift = opts.context_shift;
  opts.max_queue = config.max_queue;
  opts.step_token_budget = config.step_token_budget;
  opts.step_time_target_ms = static_cast<double>(config.step_time_target_ms);
  const Tokenizer* tok = m->tokenizer.get();
  opts.is_eog = [tok](int32_t id) { return tok->IsEog(id); };
  SPARROW_ASSIGN_OR_RETURN(m->sparse_plan,
                           MakeSparsePlanFromConfig(config, *m->model, m->pool.get()));
  opts.make_ffn = [plan = m->sparse_plan](const Model& model, kernels::ThreadPool* pool) {
    return plan ? MakeFeedForward(model, plan, pool) : MakeDefaultFeedForward(model, pool);
  };
  const std::shared_ptr<NeuronStore> store = m->sparse_plan ? m->sparse_plan->store : nullptr;
  if (store) opts.memory_users.push_back(store);
  const Model& model = *m->model;
  // What the process holds whatever the context: the FFN's rows on flash are read through the
  // neuron cache, the rest of the file is mapped and read.
  const uint64_t ffn_on_flash = store ? model.weights().bundles->bundle_bytes() : 0;
  uint64_t weights_bytes =
      model.file().file_size() - std::min(ffn_on_flash, model.file().file_size());
  if (m->sparse_plan) weights_bytes += m->sparse_plan->owned_bytes();
  const uint64_t cache_bytes = store ? store->capacity_bytes() : 0;
  const uint64_t offer = DeviceMemoryOffer();
  if (config.n_ctx > 0) {
    m->n_ctx = config.n_ctx;
  } else {
    ContextFitInput fit;
    fit.n_ctx_train = n_ctx_train;
    fit.offer_bytes = offer;
    fit.fixed_bytes = baseline_bytes + weights_bytes + cache_bytes +
                      EstimateScratchBytes(model.config(), config.step_token_budget, fit.granule,
                                           config.max_running);
    fit.kv_bytes_per_token = static_cast<uint64_t>(
        KvBlockPool::BlockBytes(model.config().n_layer, model.config().kv_dim(), 1, opts.kv_types));
    const ContextFit fitted = FitContext(fit);
    m->n_ctx = fitted.n_ctx;
    if (!fitted.why.empty()) {
      spdlog::info("model '{}': n_ctx {} to fit the device ({}; --n-ctx sets it)", m->model_id,
                   m->n_ctx, fitted.why);
    }
  }
  opts.n_ctx = m->n_ctx;
  SPARROW_ASSIGN_OR_RETURN(opts.spec, SpecFromConfig(config, *m));
  if (!config.workers.empty()) {
    if (!connect) {
      return Unsupported("config: 'workers' needs gRPC, and this sparrowd was built without it");
    }
    SPARROW_ASSIGN_OR_RETURN(ConnectedWorkers w, connect(config, *m->model, m->pool.get()));
    opts.remote_layers = w.ranges;
    opts.pipeline_micro_batches = config.shard_micro_batches;
    opts.remote_down_wait = std::chrono::milliseconds(config.worker_timeout_ms);
    m->workers = std::make_shared<const ConnectedWorkers>(std::move(w));
  }
  if (!config.prompt_cache_dir.empty()) {
    SPARROW_ASSIGN_OR_RETURN(opts.prefix_tier, OpenPromptCache(config, *m->model, opts));
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
    c.scratch_bytes =
        EstimateScratchBytes(model.config(), opts.step_token_budget, m->n_ctx, opts.max_running);
    c.scratch_min_bytes =
        EstimateScratchBytes(model.config(), kTightStepTokens, m->n_ctx, opts.max_running);
    const auto block = static_cast<uint64_t>(m->scheduler->kv_block_bytes());
    c.kv_min_bytes = block * static_cast<uint64_t>(m->scheduler->min_kv_blocks());
    c.kv_max_bytes = block * static_cast<uint64_t>(m->scheduler->options().kv_blocks);
    c.cache_max_bytes = cache_bytes;
    MemoryGovernorOptions g;
    SPARROW_ASSIGN_OR_RETURN(g.planner, PlannerFromConfig(config, *m, c));
    const MemoryBudget budget(c);
    // The first budget is what the device offers now, and no budget is more than its limit:
    // the rest comes when the sources see room for it.
    if (offer > 0) g.policy.start_bytes = std::max<uint64_t>(1, budget.ElasticFor(offer));
    if (const uint64_t limit = DeviceMemoryLimit(); limit > 0) {
      g.policy.ceiling_bytes = std::max<uint64_t>(1, budget.ElasticFor(limit));
    }
    g.process_resident = [] { return ProcessResidentBytes(); };
    g.weights_resident = [base = model.file().base()] { return MappingResidentBytes(base); };
    m->memory = std::make_unique<MemoryGovernor>(
        m->scheduler.get(),
        config.memory_pressure == 1 ? DetectPressureSources()
                                    : std::vector<std::unique_ptr<PressureSource>>{},
        budget, std::move(g));
  }
  return m;
}

}  // namespace sparrow::server
