# The image deploy/kubernetes/ runs: `docker build -t shoal:latest .` (docs/kubernetes.md). Node.js runs Shoal's
# TypeScript sources as they are (it strips the types), so the image is the sources and the production dependencies.
FROM node:24-slim
WORKDIR /opt/shoal
ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/opt/shoal/.compile-cache
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
# One start while building fills Node.js's compile cache, so no pod pays for stripping types on its first start
# (docs/dispatcher.md, "Memory"); `shoal` on PATH is for `kubectl exec … -- shoal get dispatchers`.
RUN node bin/shoal.js help >/dev/null && ln -s /opt/shoal/bin/shoal.js /usr/local/bin/shoal
USER node
ENTRYPOINT ["node", "/opt/shoal/bin/shoal.js"]
