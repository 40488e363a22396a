// --metrics HOST:PORT: the launcher serves the latest metrics (reports/metrics_report.h) over HTTP
// at /metrics while the program runs, from a thread of its own (Boost.Beast over Boost.Asio, both
// header-only, so the tool stays one file that runs where there are no packages). A scrape reads
// the text made at the last refresh: it never waits for an analysis and never touches the program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace cuaudit {

// "127.0.0.1:9464", "[::1]:9464", ":9464" (loopback), "0.0.0.0:9464" (every interface).
struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
// Throws std::invalid_argument with what is wrong and what to write instead.
ListenAddress parse_listen_address(const std::string& text);

class MetricsServer {
 public:
  // Listens at once; throws std::runtime_error saying why it cannot (the port is taken, ...).
  explicit MetricsServer(const ListenAddress& address);
  ~MetricsServer();  // stops serving and joins its thread
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // What scrapes get from now on: the text format 0.0.4 and OpenMetrics, as the scraper's Accept
  // header asks.
  void publish(std::string prometheus_text, std::string openmetrics_text);
  uint16_t port() const;    // the port listened on (the one the system chose when asked for 0)
  std::string url() const;  // where the metrics are: "http://127.0.0.1:9464/metrics"
  uint64_t scrapes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cuaudit
