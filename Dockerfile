# The eksa-metrics image: the CLI, and the controller (`eksa-metrics controller run`).
#   docker build -t <registry>/eksa-metrics:<version> .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/eksa-metrics/eksa-metrics/internal/cli.Version=${VERSION}" \
      -o /out/eksa-metrics ./cmd/eksa-metrics

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/eksa-metrics /eksa-metrics
USER 65532:65532
ENTRYPOINT ["/eksa-metrics"]
