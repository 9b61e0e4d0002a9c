# Stand-in for nginx:1.26: Debian's nginx with curl, logs to the container's output, no default site.
FROM playground-standin/debian:trixie
RUN apt-get update \
 && apt-get install --yes --no-install-recommends nginx curl \
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default \
 && ln -sf /dev/stdout /var/log/nginx/access.log \
 && ln -sf /dev/stderr /var/log/nginx/error.log
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
