# Stand-in for postgres:17: Debian's PostgreSQL 17, first-start set-up from POSTGRES_* like the official image.
FROM playground-standin/debian:trixie
RUN apt-get update \
 && apt-get install --yes --no-install-recommends postgresql-17 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres /var/run/postgresql /var/lib/postgresql/data
ENV PATH=/usr/lib/postgresql/17/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["docker-entrypoint.sh"]
EXPOSE 5432
STOPSIGNAL SIGINT
CMD ["postgres"]
