# Amalgam in a container: memcached's protocol on 11211, Redis's on 6379,
# persistence in /data (a volume). docs/operations.md has the details.
#
#   docker build -t amalgam --build-arg GIT_SHA1=$(git rev-parse HEAD) .
#   docker run -p 11211:11211 -p 6379:6379 -v amalgam-data:/data amalgam
#
# Extra flags go after the image name and replace the defaults below
# (CMD), e.g. `docker run amalgam -m 1024 --config /etc/amalgam/amalgam.conf`.

# --- build -------------------------------------------------------------
FROM rust:1-slim-bookworm AS build
WORKDIR /src
# The build's commit for --version and INFO (build.rs); the build context
# has no .git (see .dockerignore), so it comes in as an argument.
ARG GIT_SHA1=00000000
ENV AMALGAM_GIT_SHA1=${GIT_SHA1}
COPY . .
RUN cargo build --release --locked -p amalgam-server --bin amalgam \
 && install -m 0755 target/release/amalgam /usr/local/bin/amalgam

# --- run ---------------------------------------------------------------
FROM debian:bookworm-slim
# A user of its own: the server needs no privileges (ports above 1024).
RUN groupadd --system amalgam \
 && useradd --system --gid amalgam --home-dir /data --shell /usr/sbin/nologin amalgam \
 && mkdir -p /data /etc/amalgam \
 && chown amalgam:amalgam /data /etc/amalgam
COPY --from=build /usr/local/bin/amalgam /usr/local/bin/amalgam
USER amalgam
WORKDIR /data
VOLUME ["/data"]
EXPOSE 11211 6379
# Listen on every interface of the container (the host decides what is
# published). Protected mode is off as in Redis's official image: set
# --requirepass (RESP) and -Y (memcached) before publishing beyond
# localhost.
ENTRYPOINT ["/usr/local/bin/amalgam"]
CMD ["-l", "0.0.0.0", "--protected-mode", "no", "--dir", "/data"]
