# corpq: PGXS build of the extension, plus the unit tests of its plain-C core.
#
#   make demo   install what is missing, build, load a real corpus into a
#               throw-away cluster and run the curation steps
#   make test   install what is missing, build, run every test suite
#
# WERROR=1 turns warnings into errors; CHECKS=1 builds with assertions
# (USE_ASSERT_CHECKING in the glue) -- CI sets both.

EXTENSION   = corpq
# The version being built is corpq.control's default_version; the released
# ones and their commits are listed in extension/sql/updates/releases.
EXTVERSION := $(shell sed -n "s/^default_version = '\(.*\)'$$/\1/p" $(CURDIR)/corpq.control)
MODULE_big  = corpq
PYTHON     ?= /usr/bin/python3

# The cores (every extension/<dir> but pg: no PostgreSQL headers) and the glue
# (extension/pg and its subsystem folders); new files and folders are picked up
# (a core may have one level of subfolders, as extension/nn's layers).
CORE_SRCS = $(sort $(filter-out extension/pg/%,$(wildcard extension/*/*.c extension/*/*/*.c)))
GLUE_SRCS = $(sort $(wildcard extension/pg/*.c extension/pg/*/*.c))
CORE_OBJS = $(CORE_SRCS:.c=.o)
CORE_HDRS = $(wildcard extension/*/*.h extension/*/*/*.h)
# C++ only where a library needs it (the CLD2 and SentencePiece shims), behind a C interface.
CORE_CXX_SRCS = $(sort $(wildcard extension/*/*.cc))
CORE_CXX_OBJS = $(CORE_CXX_SRCS:.cc=.o)
OBJS      = $(CORE_OBJS) $(CORE_CXX_OBJS) $(GLUE_SRCS:.c=.o)

# The install script is the concatenation of extension/sql/*.sql in name order.
SQL_PARTS  = $(sort $(wildcard extension/sql/*.sql))
DATA_built = $(EXTENSION)--$(EXTVERSION).sql
# ALTER EXTENSION corpq UPDATE's scripts, one per release to the next
# (docs/architecture.md: every catalog change appends to the current one).
DATA       = $(wildcard extension/sql/updates/$(EXTENSION)--*--*.sql)
# the converter of fairseq / Marian / Hugging Face Marian models (models/CONVERT.md)
SCRIPTS    = tools/corpq-convert

# The pg_regress suite: test/regress/sql/NAME.sql and expected/NAME.out; the
# files its tests include (\i) are in test/regress/fixtures/.  pg_regress
# writes results/, regression.diffs and regression.out here, where PGXS's
# clean and pg_buildext look for them.
REGRESS      = $(sort $(basename $(notdir $(wildcard test/regress/sql/*.sql))))
REGRESS_OPTS = --inputdir=test/regress --load-extension=$(EXTENSION)

WARN      = -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers
CORE_OPT ?= -O3 -march=native
# Every float expression rounds as written: the compiler may not fuse a*b+c
# into one FMA in some copies of a loop (vector body) and not in others (its
# scalar tail), which would make an element's result depend on its position.
# The inference kernels use explicit FMA intrinsics (nn/ops/rowgemm_*.c).
CORE_FP   = -ffp-contract=off
ifeq ($(WERROR),1)
WARN += -Werror
endif
ifeq ($(CHECKS),1)
PG_CPPFLAGS_CHECKS = -DUSE_ASSERT_CHECKING
endif

PG_CPPFLAGS = -I$(CURDIR)/extension $(PG_CPPFLAGS_CHECKS)
PG_CFLAGS   = $(WARN)
# ICU (character properties, case mapping; PostgreSQL links it too), xxHash
# (duplicate keys), CLD2 (language identification), SentencePiece (converted
# models' segmenter) and their C++ runtime.
CORE_LIBS   = -licuuc -lxxhash -lcld2 -lsentencepiece -lstdc++
SHLIB_LINK  = -ldl -lm $(CORE_LIBS)
EXTRA_CLEAN = $(DATA_built) .build-id $(OBJS:.o=.d) test/unit/run_unit test/unit/run_unit_san test/unit/run_unit_tsan test/blas_core \
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

$(CORE_CXX_OBJS): %.o: %.cc
	$(CXX) -std=c++17 -fPIC -O2 $(WARN) -Iextension -MMD -MP -c -o $@ $<

$(DATA_built): $(SQL_PARTS)
	cat $(SQL_PARTS) > $@

# What corpq.version() reports (extension/pg/base/version.c): the version
# built and the build, `git describe` of this tree, else the file build-id
# (written by make deb into its copy of the tree), else the version.
CORPQ_BUILD := $(or $(shell cat $(CURDIR)/build-id 2>/dev/null),$(shell git -C $(CURDIR) describe --always --dirty --abbrev=12 2>/dev/null),$(EXTVERSION))
.build-id: FORCE
	@echo '$(EXTVERSION) $(CORPQ_BUILD)' | cmp -s - $@ || echo '$(EXTVERSION) $(CORPQ_BUILD)' > $@
extension/pg/base/version.o: .build-id
extension/pg/base/version.o: override CPPFLAGS += -DCORPQ_VERSION='"$(EXTVERSION)"' -DCORPQ_BUILD='"$(CORPQ_BUILD)"'
FORCE:

# ---- unit tests of the core (plain C, linked straight to OpenBLAS) -------
UNIT_SRCS = $(sort $(wildcard test/unit/*.c))
UNIT_CC   = $(CC) -std=gnu11 -g $(CORE_OPT) $(CORE_FP) $(WARN) -Iextension -Itest/unit \
	-I/usr/include/x86_64-linux-gnu/openblas-pthread

test/unit/run_unit: $(CORE_SRCS) $(CORE_CXX_OBJS) $(UNIT_SRCS) $(CORE_HDRS) $(wildcard test/unit/*.h)
	$(UNIT_CC) -o $@ $(CORE_SRCS) $(CORE_CXX_OBJS) $(UNIT_SRCS) -lopenblas -lm $(CORE_LIBS)

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer.
test/unit/run_unit_san: $(CORE_SRCS) $(CORE_CXX_OBJS) $(UNIT_SRCS) $(CORE_HDRS) $(wildcard test/unit/*.h)
	$(UNIT_CC) -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer -o $@ $(CORE_SRCS) $(CORE_CXX_OBJS) $(UNIT_SRCS) -lopenblas -lm $(CORE_LIBS)

# The tests that run the thread pool (common/parallel.h) under
# ThreadSanitizer: the pool, the kernels it runs, the translator, the
# forward shared out by pairs and mining.
TSAN_TESTS = test/unit/main.c test/unit/test_parallel.c test/unit/test_rowgemm.c \
	test/unit/test_qgemm.c test/unit/test_translate.c test/unit/test_nn_forward.c \
	test/unit/test_mine.c
test/unit/run_unit_tsan: $(CORE_SRCS) $(CORE_CXX_OBJS) $(TSAN_TESTS) $(CORE_HDRS) $(wildcard test/unit/*.h)
	$(UNIT_CC) -O1 -fsanitize=thread -o $@ $(CORE_SRCS) $(CORE_CXX_OBJS) $(TSAN_TESTS) \
		-lopenblas -lm $(CORE_LIBS)

# The core as a shared library, for the Python reference checks (ctypes).
test/libcorpqcore.so: $(CORE_SRCS) $(CORE_CXX_OBJS) test/unit/blas_direct.c $(CORE_HDRS)
	$(UNIT_CC) -shared -fPIC -o $@ $(CORE_SRCS) $(CORE_CXX_OBJS) test/unit/blas_direct.c -lopenblas -lm $(CORE_LIBS)

# corpq-spm-check: the SentencePiece model check (extension/text/spm_check.h)
# as a program beside corpq-convert, which runs it on every .spm it copies.
# Built next to the converter so the converter in the source tree finds it
# too.  (PGXS's PROGRAM cannot be combined with MODULE_big.)
SPM_CHECK_SRCS = tools/corpq-spm-check.c extension/text/spm_check.c extension/common/utf8.c \
	extension/common/error.c extension/common/mem.c extension/common/interrupt.c \
	extension/common/parallel.c
tools/corpq-spm-check: $(SPM_CHECK_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu11 -O2 $(WARN) -Iextension -o $@ $(SPM_CHECK_SRCS) -pthread
all: tools/corpq-spm-check
refcheck: tools/corpq-spm-check
install: install-spm-check
.PHONY: install-spm-check
install-spm-check: tools/corpq-spm-check
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) tools/corpq-spm-check '$(DESTDIR)$(bindir)/corpq-spm-check'
EXTRA_CLEAN += tools/corpq-spm-check

# Both programs go beside PostgreSQL's (pg_config --bindir:
# /usr/lib/postgresql/15/bin on Debian), which is not on users' PATH, so
# make install also links them into USER_BINDIR, the folder of locally
# installed programs on every Debian user's PATH.  USER_BINDIR= (empty)
# makes no links (the Debian package installs both into /usr/bin instead);
# none are made when USER_BINDIR is the bindir itself.
USER_BINDIR ?= /usr/local/bin
TOOLS        = $(notdir $(SCRIPTS)) corpq-spm-check
TOOL_LINKS   = $(if $(filter-out $(abspath $(bindir)),$(abspath $(USER_BINDIR))),$(TOOLS))
install: install-tool-links
.PHONY: install-tool-links uninstall-tool-links
install-tool-links:
ifneq ($(TOOL_LINKS),)
	$(MKDIR_P) '$(DESTDIR)$(USER_BINDIR)'
	for f in $(TOOL_LINKS); do ln -sfn '$(bindir)'/$$f '$(DESTDIR)$(USER_BINDIR)'/$$f || exit 1; done
endif
# Only links to this bindir's programs are removed (not another install's).
uninstall: uninstall-tool-links
uninstall-tool-links:
ifneq ($(TOOL_LINKS),)
	for f in $(TOOL_LINKS); do \
		l='$(DESTDIR)$(USER_BINDIR)'/$$f; \
		if [ -L "$$l" ] && [ "$$(readlink "$$l")" = '$(bindir)'/$$f ]; then rm -f "$$l" || exit 1; fi; \
	done
endif

# The OpenBLAS core rule of extension/common/cpu.c as a program, for scripts
# (they export its answer as OPENBLAS_CORETYPE; see test/blas_core.c).
test/blas_core: test/blas_core.c extension/common/cpu.c extension/common/cpu.h
	$(UNIT_CC) -o $@ test/blas_core.c extension/common/cpu.c


.PHONY: deps unit unit-san unit-tsan refcheck integration citus cores test demo bench report \
	update-check deb uninstall-scripts FORCE

# The quality report: make report DB=mydb [OUT=report.html] [CORPUS="SELECT src,
# tgt, domain FROM t"] [MODEL=m] [LEXICON=l] [CAV="SELECT label, cav FROM t"]
# [TOKENS=a,b] [CLASSIFIER=pq].  Vega, Vega-Lite and vega-embed come from npm (versions in
# report/package-lock.json) and are inlined into the page.
report/node_modules/.corpq-stamp: report/package.json report/package-lock.json
	cd report && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	touch $@

report: report/node_modules/.corpq-stamp
	@test -n "$(DB)" || { echo "make report: say which database: make report DB=name (or a connection string)" >&2; exit 2; }
	$(PYTHON) report/corpq_report.py --db "$(DB)" --out "$(or $(OUT),corpq-report.html)" \
		$(if $(CORPUS),--corpus "$(CORPUS)") $(if $(MODEL),--model "$(MODEL)") \
		$(if $(LEXICON),--lexicon "$(LEXICON)") $(if $(CAV),--cav "$(CAV)") $(if $(TOKENS),--tokens "$(TOKENS)") \
		$(if $(CLASSIFIER),--classifier "$(CLASSIFIER)")

deps:
	bash test/deps.sh

# Tests run OpenBLAS with the core the extension would choose (test/with-blas-core.sh).
unit: test/unit/run_unit test/blas_core
	test/with-blas-core.sh test/unit/run_unit

unit-san: test/unit/run_unit_san test/blas_core
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 test/with-blas-core.sh test/unit/run_unit_san

unit-tsan: test/unit/run_unit_tsan
	TSAN_OPTIONS=halt_on_error=1 test/unit/run_unit_tsan

# test/ref/test_*.py compare the core with PyTorch / NLTK / straightforward Python.
refcheck: test/libcorpqcore.so test/blas_core
	test/with-blas-core.sh bash test/run-ref.sh $(PYTHON)

integration:
	bash test/run-integration.sh

# corpq on a Citus coordinator and two workers (test/citus/run.sh): with an
# installed Citus, or Citus built once per machine from
# ../shared/vendor/citus-13.2.2.tar.gz; one line saying it was skipped otherwise.
citus:
	bash test/citus/run.sh

# The catalog of each release updated by ALTER EXTENSION corpq UPDATE equals
# a fresh install's (after install; test/update-check.sh).
update-check:
	bash test/update-check.sh

# The Debian packages postgresql-15-corpq and corpq-convert (debian/), built
# from a copy of this tree into $(DEB_OUT) and checked by lintian.
DEB_OUT ?= build/deb
deb:
	bash debian/build.sh $(DEB_OUT)

# PGXS's uninstall removes $(bindir)/tools/corpq-convert (it keeps SCRIPTS'
# folder), not the $(bindir)/corpq-convert its install wrote, nor
# corpq-spm-check, which has its own install rule.
uninstall: uninstall-scripts
uninstall-scripts:
	rm -f $(addprefix '$(DESTDIR)$(bindir)'/, $(TOOLS))

# The numeric checks again under each OpenBLAS core type (after install).
cores: test/libcorpqcore.so test/blas_core
	bash test/run-cores.sh

test:
	bash test/deps.sh
	$(MAKE) all
	$(MAKE) install
	$(MAKE) report/node_modules/.corpq-stamp
	$(MAKE) unit unit-san unit-tsan refcheck
	bash test/run-regress.sh
	$(MAKE) update-check
	$(MAKE) integration
	$(MAKE) citus
	$(MAKE) cores
	@echo "make test: all suites passed"

demo:
	bash test/deps.sh
	$(MAKE) all
	$(MAKE) install
	$(MAKE) report/node_modules/.corpq-stamp
	bash test/data/make-corpus.sh test/data/corpus
	bash test/demo/run-demo.sh test/data/corpus

bench:
	bash test/bench/run.sh
