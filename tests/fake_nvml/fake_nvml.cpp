/* A fake NVML (libnvidia-ml.so.1) for abtrack's tests: the entry points abtrack calls
 * (tracker/runner/nvml.hpp), reporting GPUs that do what these environment variables say.
 * abtrack loads it when ABTRACK_NVML_LIBRARY names it.
 *
 *   FAKE_NVML_GPUS=N                how many GPUs (default 1), with UUIDs
 *                                   GPU-fake0000-0000-0000-0000-00000000000<i>
 *   FAKE_NVML_NAME=NAME[,NAME...]   their names, GPU i the ith (the last one for the rest;
 *                                   default "Fake GPU")
 *   FAKE_NVML_INIT_FAIL=1           nvmlInit_v2 fails (NVML_ERROR_DRIVER_NOT_LOADED)
 *   FAKE_NVML_BUSY_FROM_CALL=N      utilisation calls 1..N-1 (counted over all GPUs) report an
 *                                   idle GPU (0%, clocks 345/1593 MHz, 80 W, 35 C, reason idle
 *                                   0x1); from the Nth on busy (90%/40%, 1980/2619 MHz, 650 W,
 *                                   60 C). Clocks, power and temperature follow the last
 *                                   utilisation call. Default 1: busy from the start
 *   FAKE_NVML_BUSY_POWER_W=W        the busy power draw (default 650)
 *   FAKE_NVML_THROTTLE_FROM_CALL=N  clock-event-reason calls from the Nth on (counted over all
 *                                   GPUs) add FAKE_NVML_THROTTLE (default 0x4, sw_power_cap)
 *   FAKE_NVML_NO_EVENT_REASONS=1    nvmlDeviceGetCurrentClocksEventReasons is "not found" (an
 *                                   old driver): only nvmlDeviceGetCurrentClocksThrottleReasons
 *                                   works
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;
typedef struct {
  unsigned gpu, memory;
} nvmlUtilization_t;

enum { OK = 0, INVALID_ARGUMENT = 2, DRIVER_NOT_LOADED = 9, FUNCTION_NOT_FOUND = 13 };

static long env_long(const char* name, long otherwise) {
  const char* v = getenv(name);
  return v && *v ? strtol(v, NULL, 0) : otherwise;
}

static unsigned long util_calls, reason_calls;
static int busy_now(void) {
  return __atomic_load_n(&util_calls, __ATOMIC_RELAXED) >= (unsigned long)env_long("FAKE_NVML_BUSY_FROM_CALL", 1);
}
static long gpus(void) { return env_long("FAKE_NVML_GPUS", 1); }

/* A device handle is its index + 1 (never null). */
static long index_of(nvmlDevice_t d) { return (long)(size_t)d - 1; }
static int valid(nvmlDevice_t d) { return index_of(d) >= 0 && index_of(d) < gpus(); }

nvmlReturn_t nvmlInit_v2(void) { return env_long("FAKE_NVML_INIT_FAIL", 0) ? DRIVER_NOT_LOADED : OK; }
nvmlReturn_t nvmlShutdown(void) { return OK; }
const char* nvmlErrorString(nvmlReturn_t r) { return r == DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error"; }

nvmlReturn_t nvmlSystemGetDriverVersion(char* buf, unsigned n) {
  snprintf(buf, n, "999.99.99");
  return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  *n = (unsigned)gpus();
  return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if ((long)i >= gpus()) return INVALID_ARGUMENT;
  *d = (nvmlDevice_t)(size_t)(i + 1);
  return OK;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* buf, unsigned n) {
  if (!valid(d)) return INVALID_ARGUMENT;
  const char* name = getenv("FAKE_NVML_NAME");
  if (!name || !*name) name = "Fake GPU";
  for (long i = 0; i < index_of(d); ++i) {  // the ith of the comma-separated names
    const char* comma = strchr(name, ',');
    if (!comma) break;
    name = comma + 1;
  }
  snprintf(buf, n, "%.*s", (int)strcspn(name, ","), name);
  return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* buf, unsigned n) {
  if (!valid(d)) return INVALID_ARGUMENT;
  snprintf(buf, n, "GPU-fake0000-0000-0000-0000-%012ld", index_of(d));
  return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  if (!valid(d)) return INVALID_ARGUMENT;
  __atomic_add_fetch(&util_calls, 1, __ATOMIC_RELAXED);
  u->gpu = busy_now() ? 90 : 0;
  u->memory = busy_now() ? 40 : 0;
  return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  if (!valid(d)) return INVALID_ARGUMENT;
  if (type == 1) *mhz = busy_now() ? 1980 : 345;       /* SM */
  else if (type == 2) *mhz = busy_now() ? 2619 : 1593; /* memory */
  else *mhz = 0;
  return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
  if (!valid(d)) return INVALID_ARGUMENT;
  *mw = busy_now() ? (unsigned)env_long("FAKE_NVML_BUSY_POWER_W", 650) * 1000 : 80000;
  return OK;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned* mw) {
  if (!valid(d)) return INVALID_ARGUMENT;
  *mw = 700000;
  return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* c) {
  if (!valid(d) || sensor != 0) return INVALID_ARGUMENT;
  *c = busy_now() ? 60 : 35;
  return OK;
}

static nvmlReturn_t reasons(nvmlDevice_t d, unsigned long long* r) {
  if (!valid(d)) return INVALID_ARGUMENT;
  unsigned long n = __atomic_add_fetch(&reason_calls, 1, __ATOMIC_RELAXED);
  long from = env_long("FAKE_NVML_THROTTLE_FROM_CALL", 0);
  *r = busy_now() ? 0 : 0x1;
  if (from > 0 && n >= (unsigned long)from) *r |= (unsigned long long)env_long("FAKE_NVML_THROTTLE", 0x4);
  return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* r) {
  if (env_long("FAKE_NVML_NO_EVENT_REASONS", 0)) return FUNCTION_NOT_FOUND;
  return reasons(d, r);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* r) { return reasons(d, r); }

}  // extern "C"
