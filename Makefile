# corpq: PGXS build of the extension, plus the unit tests of its plain-C core.
#
#   make demo   install what is missing, build, load a real corpus into a
#               throw-away cluster and run the curation steps
#   make test   install what is missing, build, run every test suite
#
# WERROR=1 turns warnings into errors; CHECKS=1 builds with assertions
# (USE_ASSERT_CHECKING in the glue) -- CI sets both.

EXTENSION   = corpq
EXTVERSION  = 0.1.0
MODULE_big  = corpq
PYTHON     ?= /usr/bin/python3

# The cores (every extension/<dir> but pg: no PostgreSQL headers) and the glue
# (extension/pg and its subsystem folders); new files and folders are picked up.
CORE_SRCS = $(sort $(filter-out extension/pg/%,$(wildcard extension/*/*.c)))
GLUE_SRCS = $(sort $(wildcard extension/pg/*.c extension/pg/*/*.c))
CORE_OBJS = $(CORE_SRCS:.c=.o)
OBJS      = $(CORE_OBJS) $(GLUE_SRCS:.c=.o)

# The install script is the concatenation of extension/sql/*.sql in name order.
SQL_PARTS  = $(sort $(wildcard extension/sql/*.sql))
DATA_built = $(EXTENSION)--$(EXTVERSION).sql

REGRESS      = $(sort $(basename $(notdir $(wildcard sql/*.sql))))
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)

WARN      = -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers
CORE_OPT ?= -O3 -march=native
# Every float expression rounds as written: the compiler may not fuse a*b+c
# into one FMA in some copies of a loop (vector body) and not in others (its
# scalar tail), which would make an element's result depend on its position.
# The inference kernels use explicit FMA intrinsics (nn/rowgemm_*.c).
CORE_FP   = -ffp-contract=off
ifeq ($(WERROR),1)
WARN += -Werror
endif
ifeq ($(CHECKS),1)
PG_CPPFLAGS_CHECKS = -DUSE_ASSERT_CHECKING
endif

PG_CPPFLAGS = -I$(CURDIR)/extension $(PG_CPPFLAGS_CHECKS)
PG_CFLAGS   = $(WARN)
SHLIB_LINK  = -ldl -lm
EXTRA_CLEAN = $(DATA_built) $(OBJS:.o=.d) test/unit/run_unit test/unit/run_unit_san test/blas_core \
	test/libcorpqcore.so results regression.diffs regression.out

# JIT bitcode is of no use for corpq's functions and needs clang.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild objects when a header they include changes.
override CPPFLAGS += -MMD -MP
-include $(OBJS:.o=.d)

# The core is C99 with its own optimisation level.
$(CORE_OBJS): CFLAGS += -Wno-declaration-after-statement $(CORE_OPT) $(CORE_FP)

$(DATA_built): $(SQL_PARTS)
	cat $(SQL_PARTS) > $@

# ---- unit tests of the core (plain C, linked straight to OpenBLAS) -------
UNIT_SRCS = $(sort $(wildcard test/unit/*.c))
UNIT_CC   = $(CC) -std=gnu11 -g $(CORE_OPT) $(CORE_FP) $(WARN) -Iextension -Itest/unit \
	-I/usr/include/x86_64-linux-gnu/openblas-pthread

test/unit/run_unit: $(CORE_SRCS) $(UNIT_SRCS) $(wildcard extension/*/*.h test/unit/*.h)
	$(UNIT_CC) -o $@ $(CORE_SRCS) $(UNIT_SRCS) -lopenblas -lm

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer.
test/unit/run_unit_san: $(CORE_SRCS) $(UNIT_SRCS) $(wildcard extension/*/*.h test/unit/*.h)
	$(UNIT_CC) -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer -o $@ $(CORE_SRCS) $(UNIT_SRCS) -lopenblas -lm

# The core as a shared library, for the Python reference checks (ctypes).
test/libcorpqcore.so: $(CORE_SRCS) test/unit/blas_direct.c $(wildcard extension/*/*.h)
	$(UNIT_CC) -shared -fPIC -o $@ $(CORE_SRCS) test/unit/blas_direct.c -lopenblas -lm

# The OpenBLAS core rule of extension/common/cpu.c as a program, for scripts
# (they export its answer as OPENBLAS_CORETYPE; see test/blas_core.c).
test/blas_core: test/blas_core.c extension/common/cpu.c extension/common/cpu.h
	$(UNIT_CC) -o $@ test/blas_core.c extension/common/cpu.c

.PHONY: deps unit unit-san refcheck integration cores test demo bench

deps:
	bash test/deps.sh

# Tests run OpenBLAS with the core the extension would choose (test/with-blas-core.sh).
unit: test/unit/run_unit test/blas_core
	test/with-blas-core.sh test/unit/run_unit

unit-san: test/unit/run_unit_san test/blas_core
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 test/with-blas-core.sh test/unit/run_unit_san

# test/ref/test_*.py compare the core with PyTorch / NLTK / straightforward Python.
refcheck: test/libcorpqcore.so test/blas_core
	test/with-blas-core.sh bash test/run-ref.sh $(PYTHON)

integration:
	bash test/run-integration.sh

# The numeric checks again under each OpenBLAS core type (after install).
cores: test/libcorpqcore.so test/blas_core
	bash test/run-cores.sh

test:
	bash test/deps.sh
	$(MAKE) all
	$(MAKE) install
	$(MAKE) unit unit-san refcheck
	bash test/run-regress.sh
	$(MAKE) integration
	$(MAKE) cores
	@echo "make test: all suites passed"

demo:
	bash test/deps.sh
	$(MAKE) all
	$(MAKE) install
	bash test/data/make-corpus.sh test/data/corpus
	bash test/demo/run-demo.sh test/data/corpus

bench:
	bash test/bench/run.sh
