#!/usr/bin/env bash
# Builds the Helenus Spark source (target/helenus-spark.jar) against the jars of the pyspark
# beside it: SPARK_JARS=dir, else the jars of the `pyspark` that PYTHON (python3) imports.
# javac only, no build tool: the source is a handful of classes and Spark supplies every class
# it uses.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -z "${SPARK_JARS:-}" ]; then
  SPARK_JARS="$("${PYTHON:-python3}" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
fi
out="$here/target"
rm -rf "$out/classes"
mkdir -p "$out/classes/META-INF/services"
javac --release 11 -Xlint:-options -d "$out/classes" -cp "$SPARK_JARS/*" "$here"/src/io/helenus/spark/*.java
echo io.helenus.spark.HelenusSource > "$out/classes/META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
(cd "$out/classes" && jar cf "$out/helenus-spark.jar" .)
echo "$out/helenus-spark.jar"
