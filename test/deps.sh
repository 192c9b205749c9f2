#!/usr/bin/env bash
# Install the Debian packages corpq needs to build, test and demo, if missing.
# Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail

need=(
	postgresql-15 postgresql-server-dev-15 postgresql-common postgresql-contrib
	libopenblas-dev libopenblas0-pthread
	gcc make
	python3 python3-torch python3-nltk python3-numpy python3-regex
	libsword-utils gettext
)
# Optional data packages for the demo corpus (the demo falls back to a
# synthetic corpus when they cannot be had).
optional=(sword-text-web sword-text-sparv)

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
if [ "$(id -u)" = 0 ]; then
	for p in "${optional[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$p" >/dev/null 2>&1 \
			|| echo "corpq: optional package $p not available; demo uses what it can"
	done
fi
exit 0
