#!/usr/bin/env bash
# The real `mqadmin` (org.apache.rocketmq:rocketmq-tools from Maven Central), for the
# operator tests.
#
#   mqadmin.sh install [VERSION...]      fetch the tools' jars (default: 5.3.3 4.9.8; idempotent)
#   mqadmin.sh VERSION COMMAND [ARGS...] run one mqadmin command, e.g.
#                                        mqadmin.sh 5.3.3 topicList -n 127.0.0.1:9876
#
# MQADMIN_HOME, when set, is the tools' home instead of mqadmin/<version>/home: its
# conf/tools.yml (accessKey, secretKey) signs every request (ACL).
#
# Jars live in tests/clients/mqadmin/<version>/lib. mqadmin exits 0 even when a command
# fails: callers read its output.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

install_one() { # version
  local v=$1 dir="$here/mqadmin/$1"
  if [ -f "$dir/lib/.done" ]; then return 0; fi
  mkdir -p "$dir/fetch" "$dir/home/conf"
  cat > "$dir/fetch/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.stratus</groupId><artifactId>mqadmin-$v</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-tools</artifactId><version>$v</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$dir/lib"
  (cd "$dir/fetch" && mvn -B -q -ntp dependency:copy-dependencies -DoutputDirectory="$dir/lib" -DincludeScope=runtime)
  # 4.9's MQAdminStartup configures logback from $ROCKETMQ_HOME/conf/logback_tools.xml.
  cat > "$dir/home/conf/logback_tools.xml" <<'XML'
<configuration><root level="OFF"/></configuration>
XML
  touch "$dir/lib/.done"
}

case ${1:?usage: mqadmin.sh install [VERSION...] | mqadmin.sh VERSION COMMAND [ARGS...]} in
  install)
    shift
    versions=("$@")
    [ ${#versions[@]} -gt 0 ] || versions=(5.3.3 4.9.8)
    for v in "${versions[@]}"; do install_one "$v"; done
    ;;
  *)
    v=$1
    shift
    install_one "$v" >&2
    dir="$here/mqadmin/$v"
    home=${MQADMIN_HOME:-$dir/home}
    exec java -Xms64m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      -Drocketmq.home.dir="$home" -Duser.home="$home" \
      -Drocketmq.client.logUseSlf4j=false -Drocketmq.client.logLevel=ERROR \
      -cp "$dir/lib/*" org.apache.rocketmq.tools.command.MQAdminStartup "$@"
    ;;
esac
