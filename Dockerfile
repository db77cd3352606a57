# trawler: one static binary serving the API and running the operator.
#   docker build -t trawler:latest --build-arg VERSION=$(git describe --tags --always) .
FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so source edits reuse the module download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/trawler .

# Nothing but the binary, CA roots (TLS to MongoDB and storage) and an
# unprivileged user; the Helm chart adds a read-only root filesystem.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/trawler /trawler
USER 65532:65532
EXPOSE 8000
ENTRYPOINT ["/trawler"]
CMD ["serve"]
