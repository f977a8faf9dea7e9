# The osprov image: one image, three commands (worker, bridge, codec-server). Only the runtime package:
# the dev environment (devenv/) is a separate distribution and is not copied in.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY osprov osprov
COPY api api
COPY runtime runtime
COPY workflows workflows
COPY activities activities
COPY bridge bridge
COPY worker worker
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 10001
ENTRYPOINT ["osprov"]
CMD ["worker"]
