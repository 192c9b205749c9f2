#!/usr/bin/env bash
# Install the Debian packages corpq needs to build, test and demo, if missing.
# Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail

need=(
	postgresql-15 postgresql-server-dev-15 postgresql-common postgresql-contrib
	libopenblas-dev libopenblas0-pthread
	gcc g++ make
	python3 python3-torch python3-nltk python3-numpy python3-regex
	libsword-utils gettext
	# rule filters and language ID: ICU, xxHash, CLD2; OpusFilter's
	# definitions in Python for the reference checks and the benchmark
	libicu-dev libxxhash-dev libcld2-dev
	# SentencePiece (converted Marian / OPUS-MT models), and its command-line
	# tools as the reference of the shim's test
	libsentencepiece-dev sentencepiece
	python3-regex python3-bs4 python3-xxhash
	# the quality report's page test: headless Chromium, PNG decoding
	chromium python3-pil
	# the Debian package (make deb: debhelper, pg_buildext, lintian) and the
	# update check (nm reads the library's symbols)
	debhelper dpkg-dev fakeroot lintian postgresql-server-dev-all binutils python3-yaml
	# keeping scores current on a schedule (test/integration/score_job.sh)
	postgresql-15-cron
	# the curation benchmark's OpusFilter-style baseline (test/bench/bench_curation.sh)
	python3-sklearn
)
# Optional data packages for the demo corpus (the demo falls back to a
# synthetic corpus when they cannot be had).
optional=(sword-text-web sword-text-sparv)

# Citus's build dependencies, when test/citus/run.sh will build it from
# ../shared/vendor (nothing when Citus is installed or the source is absent)
read -r -a citus_deps <<<"$(bash "$(dirname "$0")/citus/build.sh" --deps)"
need+=("${citus_deps[@]}")
# pgvector's, when test/pgvector/build.sh will build it (today none beyond
# corpq's own)
read -r -a pgvector_deps <<<"$(bash "$(dirname "$0")/pgvector/build.sh" --deps)"
need+=("${pgvector_deps[@]}")

missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "corpq: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	echo "corpq: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# npm (for the report's Vega bundles): any npm will do, e.g. NodeSource's;
# Debian's package otherwise
if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then
		echo "corpq: npm is missing (run as root to install Debian's npm)" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm
fi
if [ "$(id -u)" = 0 ]; then
	for p in "${optional[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$p" >/dev/null 2>&1 \
			|| echo "corpq: optional package $p not available; demo uses what it can"
	done
fi
exit 0
