# The uplink binary in a small image, for the Kubernetes Jobs of
# 'uplink slurm --emit k8s' (docs/cluster.md):
#   docker build -t registry.example/uplink:1 .
#   docker push registry.example/uplink:1
#   uplink slurm --emit k8s --k8s-image registry.example/uplink:1 ...
# The build stage's Go is go.mod's (cmd/uplink's TestDockerfile checks it).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static, for an image with no C library. .git is not copied in: the
# version (uplink version, each record's) names the executable's hash.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -o /out/uplink ./cmd/uplink

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/uplink /usr/local/bin/uplink
WORKDIR /sweep
ENTRYPOINT ["uplink"]
