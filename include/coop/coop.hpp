// Umbrella header: everything a host program and a kernel author need.
#pragma once

#include "coop/atomic.hpp"
#include "coop/kernel.hpp"
#include "coop/policy.hpp"
#include "coop/runtime.hpp"
#include "coop/stats.hpp"
