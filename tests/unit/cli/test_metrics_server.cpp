// --metrics' HTTP server: addresses, what a scrape gets in each format, what else it answers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "metrics_server.h"

using namespace cuaudit;

namespace {

// One HTTP/1.1 request over a plain socket; the whole answer, headers included.
std::string ask(uint16_t port, const std::string& request) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (connect(s, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      write(s, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = read(s, buffer, sizeof buffer)) > 0;) answer.append(buffer, static_cast<size_t>(n));
  }
  close(s);
  return answer;
}

std::string get(uint16_t port, const std::string& target, const std::string& accept = "") {
  return ask(port, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n" +
                       (accept.empty() ? "" : "Accept: " + accept + "\r\n") + "\r\n");
}

}  // namespace

TEST_CASE("listen addresses: host and port, loopback when only the port is given") {
  CHECK(parse_listen_address("127.0.0.1:9464").host == "127.0.0.1");
  CHECK(parse_listen_address("127.0.0.1:9464").port == 9464);
  CHECK(parse_listen_address(":9464").host == "127.0.0.1");
  CHECK(parse_listen_address("[::1]:80").host == "::1");
  CHECK(parse_listen_address("0.0.0.0:0").port == 0);
  CHECK_THROWS_AS(parse_listen_address("9464"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen_address("localhost:9464"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen_address("127.0.0.1:65536"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen_address("127.0.0.1:x"), std::invalid_argument);
  try {
    parse_listen_address("9464");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("write HOST:PORT") != std::string::npos);
  }
}

TEST_CASE("a scrape gets what was published last, in the format its Accept header asks for") {
  MetricsServer server(parse_listen_address("127.0.0.1:0"));
  REQUIRE(server.port() != 0);
  server.publish("plain 1\n", "open 1\n# EOF\n");
  const std::string plain = get(server.port(), "/metrics");
  CHECK(plain.find("200 OK") != std::string::npos);
  CHECK(plain.find("text/plain; version=0.0.4") != std::string::npos);
  CHECK(plain.find("\r\n\r\nplain 1\n") != std::string::npos);
  const std::string open =
      get(server.port(), "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
  CHECK(open.find("application/openmetrics-text") != std::string::npos);
  CHECK(open.find("open 1\n# EOF\n") != std::string::npos);
  server.publish("plain 2\n", "open 2\n# EOF\n");
  CHECK(get(server.port(), "/metrics").find("plain 2\n") != std::string::npos);
  CHECK(server.scrapes() == 3);
}

TEST_CASE("other paths and methods are refused, and a taken port is said") {
  MetricsServer server(parse_listen_address("127.0.0.1:0"));
  CHECK(get(server.port(), "/").find("404") != std::string::npos);
  CHECK(ask(server.port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").find("405") !=
        std::string::npos);
  CHECK(server.scrapes() == 0);
  try {
    MetricsServer second(parse_listen_address("127.0.0.1:" + std::to_string(server.port())));
    FAIL("a second server on a taken port");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("choose another port") != std::string::npos);
  }
}
