# Stand-in for nginx:1.26: Debian trixie's nginx (1.26) with curl for healthchecks, logging to the
# container's output. No default site: only the configuration a scenario mounts is active.
FROM playground-standin/debian:trixie
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends nginx curl \
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default \
 && ln -sf /dev/stdout /var/log/nginx/access.log \
 && ln -sf /dev/stderr /var/log/nginx/error.log \
 && nginx -v 2>&1 | grep -q 'nginx/1\.26\.' \
 && test -f /etc/nginx/uwsgi_params
EXPOSE 80
# SIGQUIT is nginx's graceful shutdown, as in the official image.
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
