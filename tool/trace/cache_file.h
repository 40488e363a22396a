// The caches a report keeps beside the trace (symbols.json, call_sites.json, kernel-access.json):
// JSON documents naming their schema, read as files received from elsewhere (safe_file.h).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace cuaudit {

// Reads the cache at `path`: `doc` stays empty when there is none yet. False with `error` when the
// file cannot be read, is not JSON, or is not of `schema` (`what` names the cache in the message:
// "symbol cache").
bool read_cache_document(const std::string& path, const char* schema, const char* what,
                         std::optional<nlohmann::json>& doc, std::string& error);

// `error` for a cache whose document was read but did not hold what its schema says.
std::string unreadable_cache(const std::string& path, const char* what, const std::exception& e);

}  // namespace cuaudit
