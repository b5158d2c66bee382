// rabbitmq_node: a throw-away rabbitmq-server run as our child; shared_broker().
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "amqp_session.hpp"
#include "dde_test.hpp"

namespace dde::test {
namespace {

// Called directly: the /usr/sbin wrappers switch to the rabbitmq user when run as root.
const char* const server_script = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const char* const ctl_script = "/usr/lib/rabbitmq/bin/rabbitmqctl";
const char* const queues_script = "/usr/lib/rabbitmq/bin/rabbitmq-queues";

/// Erlang node names allow letters, digits, '-' and '_'.
std::string node_safe(std::string name) {
  for (auto& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return name;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string tail(const std::string& text, std::size_t max) {
  return text.size() <= max ? text : "..." + text.substr(text.size() - max);
}

}  // namespace

rabbitmq_node::rabbitmq_node(const std::string& name)
    : name_(node_safe(name)),
      node_name_(name_ + "-" + std::to_string(::getpid()) + "@localhost"),
      port_(free_port()),
      dir_(fresh_dir("rabbitmq-" + name_)) {
  do {
    dist_port_ = free_port();
  } while (dist_port_ == port_);
  write_config_files();
}

rabbitmq_node::~rabbitmq_node() {
  try {
    stop();
  } catch (...) {
    // A destructor must not throw; the child_process destructor still kills the VM.
  }
}

void rabbitmq_node::write_config_files() const {
  std::filesystem::create_directories(dir_ / "home");
  write_file(dir_ / "rabbitmq.conf",
             "listeners.tcp.1 = 127.0.0.1:" + std::to_string(port_) + "\n" + tls_config_ + extra_config_);
  if (!advanced_config_.empty()) write_file(dir_ / "advanced.config", advanced_config_);
  write_file(dir_ / "enabled_plugins", "[].\n");
  write_file(dir_ / "rabbitmq-env.conf", "");
}

void rabbitmq_node::enable_tls(const std::filesystem::path& ca, const std::filesystem::path& cert,
                               const std::filesystem::path& key, bool require_client_cert) {
  do {
    tls_port_ = free_port();
  } while (tls_port_ == port_ || tls_port_ == dist_port_);
  tls_config_ = "listeners.ssl.1 = 127.0.0.1:" + std::to_string(tls_port_) + "\n" +
                "ssl_options.cacertfile = " + ca.string() + "\n" + "ssl_options.certfile = " + cert.string() +
                "\n" + "ssl_options.keyfile = " + key.string() + "\n" +
                "ssl_options.verify = " + (require_client_cert ? "verify_peer" : "verify_none") + "\n" +
                "ssl_options.fail_if_no_peer_cert = " + (require_client_cert ? "true" : "false") + "\n";
  write_config_files();
}

void rabbitmq_node::set_consumer_timeout(std::chrono::milliseconds timeout) {
  extra_config_ = "consumer_timeout = " + std::to_string(timeout.count()) + "\n";
  advanced_config_ = "[{rabbit, [{channel_tick_interval, 1000}]}].\n";
  write_config_files();
}

std::map<std::string, std::string> rabbitmq_node::environment() const {
  auto env = std::map<std::string, std::string>{
      {"RABBITMQ_NODENAME", node_name_},
      {"RABBITMQ_NODE_PORT", std::to_string(port_)},
      {"RABBITMQ_DIST_PORT", std::to_string(dist_port_)},
      {"RABBITMQ_MNESIA_BASE", (dir_ / "mnesia").string()},
      {"RABBITMQ_LOG_BASE", (dir_ / "log").string()},
      {"RABBITMQ_PID_FILE", (dir_ / "rabbitmq.pid").string()},
      {"RABBITMQ_CONFIG_FILE", (dir_ / "rabbitmq.conf").string()},
      {"RABBITMQ_ENABLED_PLUGINS_FILE", (dir_ / "enabled_plugins").string()},
      {"RABBITMQ_CONF_ENV_FILE", (dir_ / "rabbitmq-env.conf").string()},
      // Only loopback for Erlang distribution too.
      {"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "-kernel inet_dist_use_interface {127,0,0,1}"},
      // With "input allowed" the script execs erl (which execs beam.smp) instead of running it
      // in a background subshell, so our child's pid is the VM's; -noinput is passed as argv.
      {"RABBITMQ_ALLOW_INPUT", "true"},
      {"ERL_CRASH_DUMP", (dir_ / "erl_crash.dump").string()},
      {"HOME", (dir_ / "home").string()},  // the Erlang cookie, shared with rabbitmqctl
  };
  if (!advanced_config_.empty()) env["RABBITMQ_ADVANCED_CONFIG_FILE"] = (dir_ / "advanced.config").string();
  return env;
}

void rabbitmq_node::start(std::chrono::milliseconds timeout) {
  if (running()) return;
  server_ = std::make_unique<child_process>(std::vector<std::string>{server_script, "-noinput"},
                                            dir_ / "server.log", environment());
  const bool ready = wait_until(
      [this] {
        return !server_->running() ||
               (port_open(port_) && detail::can_login(host_, port_, user(), password(), 2000ms));
      },
      timeout, 100ms);
  if (ready && server_->running()) return;
  const bool exited = !server_->running();
  server_->kill9();
  throw std::runtime_error("rabbitmq node " + node_name_ +
                           (exited ? " exited during boot" : " did not boot in time") + "; log tail:\n" +
                           log_tail());
}

int rabbitmq_node::rabbitmqctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  return run_ctl(args, timeout, dir_ / "rabbitmqctl.log");
}

std::optional<std::string> rabbitmq_node::rabbitmqctl_output(const std::vector<std::string>& args,
                                                             std::chrono::milliseconds timeout) {
  static std::atomic<int> counter{0};
  const auto out = dir_ / ("rabbitmqctl-" + std::to_string(counter++) + ".out");
  std::string text;
  const int status = run_ctl(args, timeout, out, &text);
  if (status != 0) std::ofstream(dir_ / "rabbitmqctl.log", std::ios::app) << text;
  std::filesystem::remove(out);
  if (status != 0) return std::nullopt;
  return text;
}

int rabbitmq_node::run_ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                           const std::filesystem::path& log, std::string* output, const char* script) {
  std::vector<std::string> argv{script ? script : ctl_script, "-n", node_name_};
  argv.insert(argv.end(), args.begin(), args.end());
  auto env = environment();
  // The CLI is an Erlang node too; by default it listens on 35672-35682, which a node of ours
  // (free_port) could hold.
  const auto cli_port = std::to_string(free_port());
  env["RABBITMQ_CTL_DIST_PORT_MIN"] = cli_port;
  env["RABBITMQ_CTL_DIST_PORT_MAX"] = cli_port;
  // The CLI's VM would spin its schedulers while waiting for work: on a loaded machine that doubled
  // the time of each call.
  env["RABBITMQ_CTL_ERL_ARGS"] = "+sbwt none +sbwtdcpu none +sbwtdio none";
  child_process ctl(argv, log, env);
  const auto status = ctl.wait_exit(timeout);
  if (!status) ctl.kill9();
  if (output) *output = ctl.log();
  return status.value_or(-1);
}

std::optional<rabbitmq_node::queue_totals_t> rabbitmq_node::queue_totals(const std::string& queue) {
  // list_queues knows no dead-lettered count, and its `messages` of a quorum queue lags (a metrics
  // table refreshed every few seconds); the queue's Ra state machine answers at once.
  std::string quoted;
  for (char c : queue) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  const auto expr =
      "case rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\"" + quoted +
      "\"/utf8>>)) of {ok, Q} -> {ok, {_, M}, _} = ra:local_query(amqqueue:get_pid(Q), fun "
      "rabbit_fifo:overview/1),"
      " [maps:get(num_messages, M), maps:get(num_discarded, M) + maps:get(num_discard_checked_out, M)];"
      " _ -> missing end.";
  const auto out = rabbitmqctl_output({"-q", "eval", expr}, 60s);
  if (!out) throw std::runtime_error("rabbitmqctl eval failed on " + node_name_ + " (see rabbitmqctl.log)");
  if (out->find("missing") != std::string::npos) return std::nullopt;
  unsigned long long messages = 0, dlx = 0;  // "[3,0]"
  if (std::sscanf(out->c_str(), " [%llu,%llu]", &messages, &dlx) == 2) return queue_totals_t{messages, dlx};
  throw std::runtime_error("rabbitmqctl eval on " + node_name_ + " answered '" + *out + "' for queue " +
                           queue);
}

void rabbitmq_node::stop() {
  if (!running()) return;
  rabbitmqctl({"stop"}, 30s);
  if (!server_->wait_exit(30s)) server_->stop(5s);
  wait_until([this] { return !port_open(port_); }, 10s);
}

int rabbitmq_node::terminate() {
  if (!running()) return -1;
  const int status = server_->stop(30s);
  wait_until([this] { return !port_open(port_); }, 10s);
  return status;
}

void rabbitmq_node::kill9() {
  if (!server_) return;
  server_->kill9();  // the child is beam.smp itself (see environment())
  wait_until([this] { return !port_open(port_); }, 10s);
}

bool rabbitmq_node::running() { return server_ && server_->running(); }

int rabbitmq_node::vm_pid() { return running() ? server_->pid() : -1; }

bool rabbitmq_node::wait_quorum_queues_registered(std::chrono::milliseconds timeout) {
  // Each quorum queue member has a directory named after its Ra UId; names.dets maps names to
  // UIds, and a binary UId appears verbatim in the dets file once the mapping is written.
  const auto ra_dir = dir_ / "mnesia" / node_name_ / "quorum" / node_name_;
  return wait_until(
      [&] {
        const auto registry = read_file(ra_dir / "names.dets");
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(ra_dir, ec))
          if (entry.is_directory() && registry.find(entry.path().filename().string()) == std::string::npos)
            return false;
        return !ec;
      },
      timeout, 20ms);
}

void rabbitmq_node::use_cookie(const std::string& cookie) {
  const auto path = dir_ / "home" / ".erlang.cookie";
  std::filesystem::remove(path);
  write_file(path, cookie);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read);  // Erlang insists
}

bool rabbitmq_node::set_memory_watermark(double fraction) {
  return rabbitmqctl({"set_vm_memory_high_watermark", std::to_string(fraction)}, 60s) == 0;
}

std::map<std::string, std::string> rabbitmq_node::quorum_leaders() {
  const auto out =
      rabbitmqctl_output({"-q", "list_queues", "name", "type", "leader", "--no-table-headers"}, 60s);
  if (!out)
    throw std::runtime_error("rabbitmqctl list_queues failed on " + node_name_ + " (see rabbitmqctl.log)");
  std::map<std::string, std::string> leaders;
  std::istringstream lines(*out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, type, leader;
    if (std::getline(fields, name, '\t') && std::getline(fields, type, '\t') &&
        std::getline(fields, leader) && type == "quorum")
      leaders[name] = leader;
  }
  return leaders;
}

bool rabbitmq_node::wait_not_quorum_critical(std::chrono::milliseconds timeout) {
  return wait_until(
      [this] {
        return run_ctl({"check_if_node_is_quorum_critical"}, 60s, dir_ / "rabbitmqctl.log", nullptr,
                       queues_script) == 0;
      },
      timeout, 1000ms);
}

void rabbitmq_node::freeze() {
  const int pid = vm_pid();
  if (pid <= 0 || ::kill(pid, SIGSTOP) != 0) throw std::runtime_error("cannot freeze " + node_name_);
}

void rabbitmq_node::thaw() {
  const int pid = vm_pid();
  if (pid <= 0 || ::kill(pid, SIGCONT) != 0) throw std::runtime_error("cannot thaw " + node_name_);
}

bool rabbitmq_node::join_cluster(const rabbitmq_node& seed) {
  if (rabbitmqctl({"stop_app"}, 60s) != 0) return false;
  if (rabbitmqctl({"join_cluster", seed.node_name()}, 60s) != 0) return false;
  if (rabbitmqctl({"start_app"}, 60s) != 0) return false;
  return wait_until([this] { return detail::can_login(host_, port_, user(), password(), 2000ms); }, 60s,
                    100ms);
}

std::string rabbitmq_node::log_tail() const {
  std::string text = "--- server.log\n" + tail(read_file(dir_ / "server.log"), 3000);
  text += "\n--- log/" + node_name_ + ".log\n" + tail(read_file(dir_ / "log" / (node_name_ + ".log")), 3000);
  return text;
}

rabbitmq_node& shared_broker() {
  // Destroyed (hence stopped) at exit; if the process dies abruptly, PR_SET_PDEATHSIG kills the VM.
  static rabbitmq_node node("shared");
  static std::once_flag started;
  std::call_once(started, [] { node.start(); });
  return node;
}

}  // namespace dde::test
