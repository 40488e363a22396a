#pragma once

// Calls `record` two frames deep inside the library.
__attribute__((visibility("default"))) void library_entry(void (*record)());
