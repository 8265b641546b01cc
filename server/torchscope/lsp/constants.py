"""Names shared with the VS Code client; ``extension/src/constants.ts`` mirrors this module."""

SERVER_NAME = "torchscope"
SOURCE = "torchscope"

#: ``workspace/executeCommand`` commands served here.
CMD_PROFILE = "torchscope.profile"
CMD_CLEAR = "torchscope.clear"
CMD_ANALYZE_TRACE = "torchscope.analyzeTrace"
CMD_COMPARE_COMPILE = "torchscope.compareCompile"
CMD_SWEEP = "torchscope.sweep"
CMD_DIFF = "torchscope.diff"

#: Custom requests.
REQ_TARGET = "torchscope/target"

#: Custom notifications sent to the client.
NOTIFY_PROFILE_DONE = "torchscope/profileDone"
