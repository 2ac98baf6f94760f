/* The reviewer's page, as bytes in assentd's read-only data (see worker_web.c). */
	.section .rodata
	.balign 16
	.global web_html, web_html_end, web_js, web_js_end, web_css, web_css_end
web_html:
	.incbin "gateway/web/review.html"
web_html_end:
	.balign 16
web_js:
	.incbin "gateway/web/app.js"
web_js_end:
	.balign 16
web_css:
	.incbin "gateway/web/app.css"
web_css_end:
	/* the sizes, so that C never subtracts pointers to different objects */
	.balign 8
	.global web_html_len, web_js_len, web_css_len
web_html_len:
	.quad web_html_end - web_html
web_js_len:
	.quad web_js_end - web_js
web_css_len:
	.quad web_css_end - web_css
	.section .note.GNU-stack,"",@progbits
