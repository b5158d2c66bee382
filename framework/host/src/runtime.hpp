#pragma once
// The worker runtime the host builds on (framework/runtime: plugin loading, worker cells, the rate
// gate), named in the host's namespace. The activator's Isolate Deployer uses the same runtime.

#include "dde/runtime/cell.hpp"
#include "dde/runtime/load_failures.hpp"
#include "dde/runtime/plugin_allow.hpp"
#include "dde/runtime/plugin_loader.hpp"
#include "dde/runtime/rate_gate.hpp"
#include "dde/runtime/worker_cell.hpp"

namespace dde::host {

using runtime::cell;
using runtime::cell_owner;
using runtime::check_plugin_allowed;
using runtime::count_plugin_load_failure;
using runtime::directive;
using runtime::file_md5;
using runtime::file_sha256;
using runtime::plugin_failure;
using runtime::rate_gate;
using runtime::router_plugin;
using runtime::shared_object;
using runtime::touch_plugin_load_failures;
using runtime::worker_cell;
using runtime::worker_plugin;

}  // namespace dde::host
