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
CMD_PROFILE_RANKS = "torchscope.profileRanks"
CMD_TRY_FIX = "torchscope.tryFix"
CMD_PROFILE_IN_RUN = "torchscope.profileInRun"
CMD_COLLECT_TESTS = "torchscope.collectTests"
CMD_PROFILE_RUNNING = "torchscope.profileRunning"
CMD_LIST_JOBS = "torchscope.listJobs"

#: Custom requests.
REQ_TARGET = "torchscope/target"

#: Custom notifications sent to the client.
NOTIFY_PROFILE_DONE = "torchscope/profileDone"

#: The client's own VS Code commands that the server's lenses, code actions and hover links run
#: (``ClientCommands`` in extension/src/constants.ts). They differ from the server's command ids:
#: vscode-languageclient registers ``torchscope.compareCompile`` as a VS Code command itself.
CLIENT_OPEN_TRACE = "torchscope.openTrace"
CLIENT_PROFILE = "torchscope.profileFunction"
CLIENT_COMPARE_COMPILE = "torchscope.compareWithCompile"
CLIENT_COMPARE_LAST_COMMIT = "torchscope.compareWithLastCommit"
CLIENT_PROFILE_SIZES = "torchscope.profileSizes"
CLIENT_OPEN_GENERATED_CODE = "torchscope.openGeneratedCode"
