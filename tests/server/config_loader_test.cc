#include "config/config_loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

std::string WriteYaml(const std::string& text) {
  const std::string path = testing::TempPath("sparrow.yaml");
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigLoaderTest, DefaultsWithoutAnything) {
  FakeEnv env;
  auto r = LoadServerConfig({}, env.lookup());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.host, "127.0.0.1");
  EXPECT_EQ(r->config.port, 8080);
  EXPECT_EQ(r->config.grpc_port, 50051);
  EXPECT_EQ(r->config.model, "../shared/models/stories260K.gguf");
  EXPECT_FALSE(r->exit_now);
}

TEST(ConfigLoaderTest, FlagBeatsEnvBeatsFileBeatsDefault) {
  const std::string path = WriteYaml("port: 1000\nmax_running: 3\nmax_queue: 7\nn_ctx: 99\n");
  FakeEnv env;
  env.vars = {{"SPARROW_PORT", "2000"}, {"SPARROW_MAX_RUNNING", "4"}};
  auto r = LoadServerConfig({"--config", path, "--port", "3000"}, env.lookup());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.port, 3000);         // flag
  EXPECT_EQ(r->config.max_running, 4);     // env
  EXPECT_EQ(r->config.max_queue, 7);       // file
  EXPECT_EQ(r->config.n_ctx, 99);          // file
  EXPECT_EQ(r->config.kv_block_size, 16);  // default
  EXPECT_EQ(r->config.config_file, path);
}

TEST(ConfigLoaderTest, ShippedYamlLoadsWithDefaults) {
  FakeEnv env;
  auto r = LoadServerConfig({"--config", std::string(SPARROW_SOURCE_DIR) + "/config/sparrow.yaml"},
                            env.lookup());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ServerConfig defaults;
  EXPECT_EQ(r->config.port, defaults.port);
  EXPECT_EQ(r->config.max_body_bytes, defaults.max_body_bytes);
  EXPECT_EQ(r->config.model, defaults.model);
  EXPECT_EQ(r->config.step_token_budget, defaults.step_token_budget);
  EXPECT_EQ(r->config.max_header_bytes, defaults.max_header_bytes);
  EXPECT_EQ(r->config.max_connections, defaults.max_connections);
  EXPECT_EQ(r->config.request_timeout_ms, defaults.request_timeout_ms);
  EXPECT_EQ(r->config.write_timeout_ms, defaults.write_timeout_ms);
  EXPECT_EQ(r->config.max_buffered_bytes, defaults.max_buffered_bytes);
  EXPECT_EQ(r->config.step_time_target_ms, defaults.step_time_target_ms);
}

TEST(ConfigLoaderTest, BadValuesNameKeyValueAndOrigin) {
  FakeEnv env;
  env.vars = {{"SPARROW_PORT", "eighty"}};
  auto r = LoadServerConfig({}, env.lookup());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "config: 'port' must be an integer between 0 and 65535, got 'eighty' (from "
            "environment variable SPARROW_PORT)");

  FakeEnv none;
  auto f = LoadServerConfig({"--max-running", "0"}, none.lookup());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("'max_running'"), std::string::npos);
  EXPECT_NE(f.status().message().find("flag --max-running"), std::string::npos);

  auto y = LoadServerConfig({"--config", WriteYaml("prot: 1\n")}, none.lookup());
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("unknown key 'prot'"), std::string::npos);

  auto d = LoadServerConfig({"--io-depth", "0"}, none.lookup());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("'io_depth'"), std::string::npos) << d.status().message();
  auto d4 = LoadServerConfig({"--io-depth", "4"}, none.lookup());
  ASSERT_TRUE(d4.ok()) << d4.status().message();
  EXPECT_EQ(d4->config.io_depth, 4);

  auto l = LoadServerConfig({"--log-format", "xml"}, none.lookup());
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("'log_format'"), std::string::npos);

  auto u = LoadServerConfig({"--bogus"}, none.lookup());
  ASSERT_FALSE(u.ok());

  auto m = LoadServerConfig({"--config", "/nonexistent/sparrow.yaml"}, none.lookup());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/sparrow.yaml"), std::string::npos);
}

TEST(ConfigLoaderTest, NonLoopbackNeedsAnApiKey) {
  FakeEnv env;
  auto r = LoadServerConfig({"--host", "0.0.0.0"}, env.lookup());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'api_key'"), std::string::npos);
  auto ok = LoadServerConfig({"--host", "0.0.0.0", "--api-key", "s3cret", "--allow-insecure"},
                             env.lookup());
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

TEST(ConfigLoaderTest, AWorkerNeedsAWorkerKeyAndTlsOffLoopbackAndNoApiKey) {
  FakeEnv env;
  auto none = LoadServerConfig({"--worker", "--admin-key", "0123456789abcdef"}, env.lookup());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("a worker needs a worker key (worker_key_file)"),
            std::string::npos);
  auto coordinator = LoadServerConfig({"--workers", "127.0.0.1:50061"}, env.lookup());
  ASSERT_FALSE(coordinator.ok());
  EXPECT_NE(coordinator.status().message().find("'workers' needs a worker key"), std::string::npos);
  // Off loopback a worker needs TLS, --allow-insecure or not.
  auto plain = LoadServerConfig(
      {"--worker", "--host", "10.0.0.2", "--worker-key-file", "/k", "--allow-insecure"},
      env.lookup());
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("(not loopback) needs TLS"), std::string::npos);
  // It serves no API, so off loopback it needs no api key (the worker key guards it).
  auto ok = LoadServerConfig({"--worker", "--host", "10.0.0.2", "--worker-key-file", "/k",
                              "--tls-cert", "/c", "--tls-key", "/k"},
                             env.lookup());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->config.worker, 1);
  EXPECT_EQ(ok->config.worker_key_file, "/k");
  auto both = LoadServerConfig(
      {"--worker", "--worker-key-file", "/k", "--workers", "10.0.0.3:50061"}, env.lookup());
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("exclude each other"), std::string::npos);
  auto bad = LoadServerConfig({"--worker-timeout-ms", "5"}, env.lookup());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'worker_timeout_ms'"), std::string::npos);
  auto objective = LoadServerConfig({"--shard-objective", "fastest"}, env.lookup());
  ASSERT_FALSE(objective.ok());
  EXPECT_NE(objective.status().message().find("'shard_objective' must be latency or throughput"),
            std::string::npos);
  auto split = LoadServerConfig({"--shard-split", "heads"}, env.lookup());
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("'shard_split' must be layers, tensor or auto"),
            std::string::npos);
  auto fixed = LoadServerConfig({"--shard-split", "tensor", "--shard-layers", "2,2"}, env.lookup());
  ASSERT_FALSE(fixed.ok());
  EXPECT_NE(fixed.status().message().find("'shard_layers' places whole layers"), std::string::npos);
  auto tensor = LoadServerConfig({"--shard-split", "tensor"}, env.lookup());
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ(tensor->config.shard_split, "tensor");
  auto micro = LoadServerConfig({"--shard-micro-batches", "65"}, env.lookup());
  ASSERT_FALSE(micro.ok());
  EXPECT_NE(micro.status().message().find("'shard_micro_batches'"), std::string::npos);
  auto pipeline = LoadServerConfig(
      {"--shard-objective", "throughput", "--shard-micro-batches", "3"}, env.lookup());
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  EXPECT_EQ(pipeline->config.shard_objective, "throughput");
  EXPECT_EQ(pipeline->config.shard_micro_batches, 3);
}

TEST(ConfigLoaderTest, KvCacheTypesAsLlamaCppNamesThem) {
  FakeEnv env;
  auto def = LoadServerConfig({}, env.lookup());
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->config.cache_type_k, "f16");  // llama.cpp's default
  EXPECT_EQ(def->config.cache_type_v, "f16");
  auto q8 = LoadServerConfig({"--cache-type-k", "q8_0", "--cache-type-v", "q4_0"}, env.lookup());
  ASSERT_TRUE(q8.ok()) << q8.status().message();
  EXPECT_EQ(q8->config.cache_type_k, "q8_0");
  EXPECT_EQ(q8->config.cache_type_v, "q4_0");
  auto bad = LoadServerConfig({"--cache-type-v", "q4_K"}, env.lookup());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'cache_type_v' must be one of f32, f16"),
            std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("'q4_K'"), std::string::npos);
}

TEST(ConfigLoaderTest, NonLoopbackNeedsTlsOrAllowInsecure) {
  FakeEnv env;
  auto r = LoadServerConfig({"--host", "0.0.0.0", "--api-key", "s3cret"}, env.lookup());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--allow-insecure"), std::string::npos);
  EXPECT_NE(r.status().message().find("'tls_cert'"), std::string::npos);
  auto tls = LoadServerConfig(
      {"--host", "0.0.0.0", "--api-key", "s3cret", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
      env.lookup());
  ASSERT_TRUE(tls.ok()) << tls.status().message();
  EXPECT_EQ(tls->config.tls_cert, "c.pem");
  EXPECT_EQ(tls->config.allow_insecure, 0);
  auto half = LoadServerConfig({"--tls-cert", "c.pem"}, env.lookup());
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("'tls_key'"), std::string::npos);
  // The switch also comes from the environment, as every key does.
  env.vars["SPARROW_ALLOW_INSECURE"] = "1";
  auto from_env = LoadServerConfig({"--host", "::", "--api-key", "s3cret"}, env.lookup());
  ASSERT_TRUE(from_env.ok()) << from_env.status().message();
  EXPECT_EQ(from_env->config.allow_insecure, 1);
}

TEST(ConfigLoaderTest, HelpExplainsLayersAndKeys) {
  FakeEnv env;
  auto r = LoadServerConfig({"--help"}, env.lookup());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->exit_now);
  EXPECT_NE(r->message.find("SPARROW_MAX_RUNNING"), std::string::npos);
  EXPECT_NE(r->message.find("--step-token-budget"), std::string::npos);
  EXPECT_NE(r->message.find("/v1/chat/completions"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
