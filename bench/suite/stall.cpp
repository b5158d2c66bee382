// What a stalled point leaves behind, for its report: the queue's depth at the broker, what each
// MQS says of the topic, each node's pools and the daemons' last warnings and errors.
#include <fstream>
#include <iostream>

#include "measure.hpp"
#include "mqs_stats_client.hpp"

namespace dde::bench {
namespace fs = std::filesystem;
using namespace test;

void explain_stall(cluster_api& c, const setup& s) {
  const std::string topic = s.system + ".consumer";
  std::cerr << "[bench] " << topic << ": " << c.queue_depth(topic) << " ready in the broker\n";
  for (auto& url : s.mqs)
    if (auto topics = registry::topics_url(url, {topic}))
      std::cerr << "[bench] MQS " << url << ": " << rest("GET", *topics).body << "\n";
  for (int node = 0; node < c.nodes(); ++node) {
    auto show = c.describe(node);
    if (!show.is_object() || !show.contains(s.system)) continue;
    for (auto& pool : show[s.system])
      std::cerr << "[bench] node " << node << " pool " << pool.value("id", nlohmann::json()).dump() << " "
                << pool.value("poolState", nlohmann::json()).dump() << ": "
                << pool.value("stats", nlohmann::json()).dump() << "\n";
  }
  // The daemons' warnings and errors, last ones last.
  std::vector<std::string> lines;
  for (auto& entry : fs::recursive_directory_iterator(c.dir()))
    if (entry.is_regular_file() && entry.path().extension() == ".log") {
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);)
        if (line.find(" warn ") != std::string::npos || line.find(" error ") != std::string::npos)
          lines.push_back(entry.path().filename().string() + ": " + line);
    }
  for (std::size_t i = lines.size() > 40 ? lines.size() - 40 : 0; i < lines.size(); ++i)
    std::cerr << "[bench]   " << lines[i] << "\n";
}

}  // namespace dde::bench
