# The image of the docker-compose demo (docker-compose.yml): the runner and,
# through the docker runtime, every agent run from it. No base image can be
# pulled, so it holds nothing but the static binary, which is built on the
# host first (scripts/compose-demo does it: CGO_ENABLED=0 go build -o
# bin/chaosrun ./cmd/chaosrun, and mkdir -p bin/state), and the experiment
# library. /state is where the runtime mounts an agent's state volume; a new
# volume takes its owner from it, so it must belong to the agents' user.
FROM scratch
COPY --chown=65532:65532 bin/state /state
COPY bin/chaosrun /chaosrun
COPY experiments /experiments
USER 65532:65532
ENTRYPOINT ["/chaosrun"]
