// Umbrella header: everything a host program and a kernel author need.
#pragma once

#include "coop/atomic.hpp"
#include "coop/errors.hpp"
#include "coop/for_each.hpp"
#include "coop/job.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"
#include "coop/policy.hpp"
#include "coop/runtime.hpp"
#include "coop/stats.hpp"
#include "coop/version.hpp"
