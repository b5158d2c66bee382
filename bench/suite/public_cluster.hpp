#pragma once
// The path users run, as the manual tells them: a local cluster started with `deploy/cluster.sh up`
// (a RabbitMQ node, dde-registry, one dde-mqs and one dde-activator named node-a, with the flags
// that script gives them) and pools deployed and stopped with `ddectl`.
#include <filesystem>
#include <string>

#include "bench_cluster.hpp"

namespace dde::bench {

class public_cluster final : public cluster_api {
 public:
  /// `deploy/cluster.sh up --prefetch prefetch` under `dir`, on free ports; throws with the script's
  /// output when it fails.
  public_cluster(std::filesystem::path dir, int prefetch);
  /// `deploy/cluster.sh down`: the activator first (its pools drain), then the MQS, the registry and
  /// the broker.
  ~public_cluster() override;

  int nodes() const override { return 1; }
  const std::filesystem::path& dir() const override { return dir_; }
  /// Its one MQS; throws for another prefetch or index, which this cluster does not have.
  std::string mqs_url(int prefetch, int index = 0) override;
  /// `ddectl deploy --bootstrapper node-a --mqs URL --system S --isolate I --uri PLUGIN ...`.
  void deploy(int node, const std::string& mqs_url, const pool_request& pool) override;
  /// `ddectl shutdown node-a SYSTEM`.
  void shutdown(int node, const std::string& system) override;
  /// `ddectl -o json show node-a`.
  nlohmann::json describe(int node) override;
  std::uint32_t queue_depth(const std::string& queue) override { return probe_.depth(queue); }
  void delete_queue(const std::string& queue) override { probe_.remove(queue); }
  std::uint16_t broker_port() override { return rabbitmq_port_; }
  /// The pid rabbitmq.sh recorded for the node's Erlang VM.
  int broker_pid() override;

 private:
  /// Runs ddectl against this cluster's registry; its standard output. Throws with its standard error
  /// when it fails.
  std::string ddectl(std::vector<std::string> args) const;
  /// Runs `deploy/cluster.sh COMMAND` with this cluster's folder and ports; false when it failed.
  bool script(const std::string& command, std::string& output) const;

  std::filesystem::path dir_;
  int prefetch_;
  std::uint16_t registry_port_, mqs_port_, activator_port_, rabbitmq_port_;
  queue_probe probe_;
};

}  // namespace dde::bench
