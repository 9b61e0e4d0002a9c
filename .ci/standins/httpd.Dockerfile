# Stand-in for httpd:2.4: Debian trixie's Apache httpd 2.4 (apache2-bin), laid out as in the official image:
# ServerRoot /usr/local/apache2 with conf/httpd.conf, modules/ (every module as mod_*.so), logs/ and htdocs/;
# httpd and httpd-foreground on PATH; CMD httpd-foreground; SIGWINCH (graceful stop) as the stop signal; no curl
# (the official image has none either). Differences from the official image, none of which a scenario sees:
# - The official build loads mod_unixd, mod_log_config, mod_logio, mod_version and mod_watchdog from modules/;
#   Debian compiles them into the binary, where `LoadModule` of a built-in module is an error. So `httpd` here is
#   a small script (httpd-standin.sh) that runs Debian's apache2 on a copy of conf/httpd.conf without those
#   LoadModule lines; the modules work the same.
# - The processes are named apache2, not httpd; `httpd -v` says "Apache/2.4.x (Debian)".
# - conf/ holds a short httpd.conf (an "It works!" page on port 80), not the official 500-line sample: every
#   scenario mounts its own whole configuration.
FROM playground-standin/debian:trixie
ENV HTTPD_PREFIX=/usr/local/apache2
ENV PATH=$HTTPD_PREFIX/bin:$PATH
WORKDIR $HTTPD_PREFIX
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends apache2-bin \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p bin conf htdocs logs \
 && ln -s /usr/lib/apache2/modules modules \
 && echo '<html><body><h1>It works!</h1></body></html>' >htdocs/index.html \
 && /usr/sbin/apache2 -v | grep -q 'Apache/2\.4\.'
COPY httpd-standin.sh bin/httpd
COPY httpd-standin.conf conf/httpd.conf
# The official image's httpd-foreground: a stale pid file from an earlier run would stop httpd from starting.
RUN printf '#!/bin/sh\nset -e\nrm -f /usr/local/apache2/logs/httpd.pid\nexec httpd -DFOREGROUND "$@"\n' \
      >bin/httpd-foreground \
 && chmod 755 bin/httpd bin/httpd-foreground \
 && httpd -t
STOPSIGNAL SIGWINCH
EXPOSE 80
CMD ["httpd-foreground"]
