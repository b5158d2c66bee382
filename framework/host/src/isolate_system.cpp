#include "dde/host/isolate_system.hpp"

#include <future>

#include "control_link.hpp"
#include "controller.hpp"
#include "dde/log.hpp"
#include "ops_server.hpp"
#include "top_level.hpp"

namespace dde::host {

isolate_system::isolate_system(isolate_system_options options) : options_(std::move(options)) {
  if (!valid_name(options_.name))
    throw std::invalid_argument("isolate system name \"" + options_.name +
                                "\" is not valid: 1-100 characters from A-Z a-z 0-9 _ -");
  if (options_.instance.empty()) options_.instance = new_uuid();
  top_level_options t;
  t.mqs_url = options_.mqs_url;
  t.system = options_.name;
  t.instance = options_.instance;
  t.window = options_.window;
  t.stall_timeout = options_.stall_timeout;
  top_ = std::make_shared<top_level>(io_, t);
  controller_ = std::make_shared<controller>(io_, top_, options_.name);
  fetch_options fetch;
  fetch.ca_file = options_.ca_file;
  if (!options_.plugin_cache.empty()) {
    fetch.dir = std::filesystem::path(options_.plugin_cache) / "fetched";
  } else {
    temp_downloads_ = std::filesystem::temp_directory_path() / ("dde-fetched-" + options_.instance);
    fetch.dir = temp_downloads_;
  }
  controller_->set_fetch_options(std::move(fetch));
  controller_->set_plugin_allow(options_.plugin_allow);
}

isolate_system::~isolate_system() { stop(); }

void isolate_system::start() {
  net::elastic_options elastic{options_.threads, options_.thread_lag};
  elastic.thread_name = "host-io";
  threads_ = std::make_unique<net::elastic_threads>(io_, elastic);
  threads_->start();  // io_.stop() in stop() ends the threads
  top_->start();
  if (options_.ops_port >= 0) {
    ops_server_options o;
    o.port = std::uint16_t(options_.ops_port);
    o.system = options_.name;
    o.instance = options_.instance;
    o.mqs = options_.mqs_url;
    ops_ = std::make_unique<ops_server>(io_, controller_, top_, o);
    ops_->start();
    logger("host")->info("GET /metrics and /health on http://127.0.0.1:{}", ops_->port());
  }
  if (!options_.control_url.empty()) {
    control_options c;
    c.url = options_.control_url;
    c.system = options_.name;
    c.instance = options_.instance;
    c.mqs = options_.mqs_url;
    c.orphan_timeout = options_.orphan_timeout;
    c.ops_port = ops_port();
    c.request_stop = options_.request_stop ? options_.request_stop : [](const std::string&) {};
    control_ = std::make_shared<control_link>(io_, controller_, c);
    std::weak_ptr<control_link> link = control_;
    controller_->set_events(
        [link](nlohmann::json event) {
          if (auto l = link.lock()) l->send_event(std::move(event));
        },
        options_.plugin_cache);
    control_->start();
  }
  logger("host")->info("isolate system {} instance {} started, MQS {}", options_.name, options_.instance,
                       options_.mqs_url);
}

std::uint16_t isolate_system::ops_port() const { return ops_ ? ops_->port() : 0; }

std::string isolate_system::add_pool(pool_spec spec) {
  std::promise<std::string> p;
  controller_->add_pool(std::move(spec), [&p](op_result r) { p.set_value(r ? std::string() : r.error()); });
  return p.get_future().get();
}

std::string isolate_system::remove_pool(const std::string& isolate) {
  std::promise<std::string> p;
  controller_->remove_pool(isolate, [&p](op_result r) { p.set_value(r ? std::string() : r.error()); });
  return p.get_future().get();
}

nlohmann::json isolate_system::describe() {
  std::promise<nlohmann::json> p;
  controller_->describe([&p](nlohmann::json j) { p.set_value(std::move(j)); });
  return p.get_future().get();
}

void isolate_system::stop() {
  if (stopped_ || !threads_) return;  // not started, or stopped
  stopped_ = true;
  if (control_) control_->stop();
  if (ops_) ops_->stop();
  std::promise<void> pools_done;
  controller_->shutdown([&pools_done] { pools_done.set_value(); });
  pools_done.get_future().wait();
  std::promise<void> link_done;
  top_->stop(std::chrono::seconds(10), [&link_done] { link_done.set_value(); });
  link_done.get_future().wait();
  io_.stop();
  threads_->join();
  if (!temp_downloads_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(temp_downloads_, ignored);
  }
  logger("host")->info("isolate system {} stopped", options_.name);
}

}  // namespace dde::host
