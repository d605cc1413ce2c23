#!/usr/bin/env bash
# Fetches the real Apache Kafka jars the interop tests run (tests/interop/pom.xml) into .cache/kafka/<version>/
# and writes .cache/kafka/<version>/classpath.txt. Idempotent: a version whose classpath file exists and whose jars
# are all present costs nothing. KAFKA_VERSIONS overrides the list ("4.3.1 3.9.2" by default).
# Without java or mvn it prints one line and exits 0 (the interop tests then skip; under CI=true they fail).
set -euo pipefail
cd "$(dirname "$0")/.."
versions=${KAFKA_VERSIONS:-"4.3.1 3.9.2"}
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  echo "fetch_kafka: java or mvn not found; real-Kafka interop tests will be skipped" >&2
  exit 0
fi
for v in $versions; do
  dir=.cache/kafka/$v
  cp_file=$dir/classpath.txt
  if [ -f "$cp_file" ]; then
    complete=1
    IFS=: read -r -a jars < "$cp_file" || true  # the file has no trailing newline
    for j in "${jars[@]}"; do [ -f "$j" ] || { complete=0; break; }; done
    [ $complete = 1 ] && continue
  fi
  log4j2=false
  case $v in 3.*) ;; *) log4j2=true ;; esac
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "fetch_kafka: resolving Apache Kafka $v from Maven Central" >&2
  mvn -q -B -f tests/interop/pom.xml -Dkafka.version="$v" -Dkafka.log4j2=$log4j2 \
    dependency:copy-dependencies -DoutputDirectory="$PWD/$dir/jars" >"$dir/mvn.log" 2>&1 \
    || { cat "$dir/mvn.log" >&2; echo "fetch_kafka: Maven could not resolve Kafka $v" >&2; exit 1; }
  ls -d "$PWD/$dir"/jars/*.jar | tr '\n' ':' | sed 's/:$//' > "$cp_file.tmp"
  mv "$cp_file.tmp" "$cp_file"
done
