#include "metrics_server.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "metrics_report.h"

namespace cuaudit {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

// A scraper that connects and sends nothing holds the one serving thread at most this long.
constexpr auto kRequestTimeout = std::chrono::seconds(5);

}  // namespace

ListenAddress parse_listen_address(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(fmt::format(
        "--metrics {}: {} (write HOST:PORT, e.g. 127.0.0.1:9464, or :9464 for the loopback interface)", text, why));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw bad("no port");
  ListenAddress a;
  a.host = text.substr(0, colon);
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']') a.host = a.host.substr(1, a.host.size() - 2);
  if (a.host.empty()) a.host = "127.0.0.1";
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) > 65535)
    throw bad("the port is not a number from 0 to 65535");
  a.port = static_cast<uint16_t>(std::stoul(port));
  boost::system::error_code ec;
  asio::ip::make_address(a.host, ec);
  if (ec) throw bad(fmt::format("'{}' is not an IP address", a.host));
  return a;
}

struct MetricsServer::State {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::mutex lock;
  std::string prometheus, openmetrics;
  std::atomic<uint64_t> scrapes{0};

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;  // the acceptor was closed: the server stops
      serve(std::move(socket));
      accept();
    });
  }

  // One request, answered at once from the text published last.
  void serve(tcp::socket socket) {
    boost::beast::tcp_stream stream(std::move(socket));
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> request;
    boost::system::error_code ec;
    // A synchronous read obeys no expiry: the socket's own receive timeout bounds it.
    const timeval timeout{static_cast<long>(kRequestTimeout.count()), 0};
    setsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    http::read(stream, buffer, request, ec);
    if (ec) return;
    http::response<http::string_body> response;
    response.version(request.version());
    response.set(http::field::server, "cuaudit");
    response.keep_alive(false);
    const std::string target(request.target());
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      response.result(http::status::method_not_allowed);
      response.set(http::field::content_type, "text/plain");
      response.body() = "cuaudit serves GET /metrics\n";
    } else if (target == "/metrics" || target.rfind("/metrics?", 0) == 0) {
      const bool openmetrics_asked =
          std::string(request[http::field::accept]).find("application/openmetrics-text") != std::string::npos;
      const auto format = openmetrics_asked ? report::MetricsFormat::OpenMetrics : report::MetricsFormat::Prometheus;
      response.result(http::status::ok);
      response.set(http::field::content_type, report::metrics_content_type(format));
      std::lock_guard<std::mutex> hold(lock);
      response.body() = openmetrics_asked ? openmetrics : prometheus;
      ++scrapes;
    } else {
      response.result(http::status::not_found);
      response.set(http::field::content_type, "text/plain");
      response.body() = "cuaudit: the metrics are at /metrics\n";
    }
    response.prepare_payload();
    http::write(stream, response, ec);
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  }
};

MetricsServer::MetricsServer(const ListenAddress& address) : state_(std::make_unique<State>()) {
  const tcp::endpoint endpoint(asio::ip::make_address(address.host), address.port);
  boost::system::error_code ec;
  state_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) state_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) state_->acceptor.bind(endpoint, ec);
  if (!ec) state_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error(fmt::format("cannot serve metrics at {}:{}: {} (choose another port with --metrics)",
                                         address.host, address.port, ec.message()));
  }
  state_->accept();
  state_->thread = std::thread([state = state_.get()] { state->io.run(); });
}

MetricsServer::~MetricsServer() {
  state_->io.stop();  // the pending accept is abandoned; the acceptor closes with State
  if (state_->thread.joinable()) state_->thread.join();
}

void MetricsServer::publish(std::string prometheus_text, std::string openmetrics_text) {
  std::lock_guard<std::mutex> hold(state_->lock);
  state_->prometheus = std::move(prometheus_text);
  state_->openmetrics = std::move(openmetrics_text);
}

uint16_t MetricsServer::port() const { return state_->acceptor.local_endpoint().port(); }

std::string MetricsServer::url() const {
  const tcp::endpoint at = state_->acceptor.local_endpoint();
  const std::string host = at.address().to_string();
  return fmt::format(at.address().is_v6() ? "http://[{}]:{}/metrics" : "http://{}:{}/metrics", host, at.port());
}

uint64_t MetricsServer::scrapes() const { return state_->scrapes.load(); }

}  // namespace cuaudit
