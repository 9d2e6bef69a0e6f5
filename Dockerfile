# The image deploy/kubernetes/ runs: `docker build -t shoal:latest .` (docs/kubernetes.md). Node.js runs Shoal's
# TypeScript sources as they are (it strips the types), so the image is the sources and the production dependencies.
# BASE is any Debian-like image with Node.js 24 and npm on PATH: Docker Hub's node:24-slim by default, or the one
# scripts/image.sh makes with debootstrap and Node.js from the npm registry (no Docker Hub).
ARG BASE=node:24-slim
FROM ${BASE}
WORKDIR /opt/shoal
ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/opt/shoal/.compile-cache
COPY package.json package-lock.json ./
# A CA bundle the build's npm trusts besides Node.js's own, for a registry reached through a TLS-intercepting proxy:
# scripts/image.sh mounts the machine's there. Not kept in the image.
ARG NODE_EXTRA_CA_CERTS
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
# One start while building fills Node.js's compile cache, so no pod pays for stripping types on its first start
# (docs/dispatcher.md, "Memory"); `shoal` on PATH is for `kubectl exec … -- shoal get dispatchers`.
RUN node bin/shoal.js help >/dev/null && ln -s /opt/shoal/bin/shoal.js /usr/local/bin/shoal
# Not root: the user node (uid 1000) that node:24-slim has, made where the base has none. By number, so Kubernetes'
# runAsNonRoot can tell it is not root.
RUN id -u node >/dev/null 2>&1 || useradd --uid 1000 --user-group --create-home --shell /bin/sh node
USER 1000:1000
ENTRYPOINT ["node", "/opt/shoal/bin/shoal.js"]
