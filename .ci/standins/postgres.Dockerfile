# Stand-in for postgres:17: Debian trixie's PostgreSQL 17, set up on first start from POSTGRES_*
# like the official image (see postgres-entrypoint.sh).
FROM playground-standin/debian:trixie
# C.UTF-8, so initdb makes a UTF8 cluster as the official image does (not SQL_ASCII).
ENV LANG=C.UTF-8 PATH=/usr/lib/postgresql/17/bin:$PATH PGDATA=/var/lib/postgresql/data
# postgresql-common first, told not to create Debian's "main" cluster: the entrypoint creates
# the cluster in PGDATA, and an unused one would only add 40 MB.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends postgresql-common \
 && sed -ri 's/#(create_main_cluster) .*$/\1 = false/' /etc/postgresql-common/createcluster.conf \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends postgresql-17 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 2777 /var/run/postgresql \
 && install -d -o postgres -g postgres -m 700 "$PGDATA" \
 && postgres --version | grep -q ' 17\.'
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["docker-entrypoint.sh"]
VOLUME /var/lib/postgresql/data
EXPOSE 5432
# SIGINT is PostgreSQL's fast shutdown, as in the official image.
STOPSIGNAL SIGINT
CMD ["postgres"]
